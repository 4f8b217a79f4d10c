package config

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// The settings in effect (the file's, else the defaults) and the file written back.

// Effective is the value of each setting: the file's, else the default.
type Effective struct {
	Theme    string
	ASCII    bool
	Keys     []KeyName // every rebindable binding with its keys
	Contexts map[string]Context
	Wall     Wall // Tiles and Group "auto" when not set; Attention set
}

// Effective merges the file's settings over the defaults.
func (c *Config) Effective(s Schema) Effective {
	e := Effective{Theme: "auto", Contexts: c.Contexts, Wall: c.Wall}
	if c.Theme != "" {
		e.Theme = c.Theme
	}
	if c.ASCII != nil {
		e.ASCII = *c.ASCII
	}
	if e.Wall.Tiles == "" {
		e.Wall.Tiles = "auto"
	}
	if e.Wall.Group == "" {
		e.Wall.Group = "auto"
	}
	attention := c.Wall.Attention == nil || *c.Wall.Attention
	e.Wall.Attention = &attention
	for _, kn := range s.Keys {
		if kn.Fixed {
			continue
		}
		if keys, ok := c.Keys[kn.Name]; ok {
			kn.Keys = keys
		}
		e.Keys = append(e.Keys, kn)
	}
	return e
}

// Write prints the effective settings as a settings file: what
// `ctpool-tui config view` shows (loc says where the file is, and whether
// there was one).
func (c *Config) Write(w io.Writer, s Schema, loc Location) error {
	e := c.Effective(s)
	if c.Path != "" {
		fmt.Fprintf(w, "# ctpool-tui settings: %s (from %s), over the defaults; flags override them\n", c.Path, loc.From)
	} else {
		fmt.Fprintf(w, "# ctpool-tui settings: no file at %s (from %s): the defaults; flags override them\n", loc.Path, loc.From)
	}
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }
	typed := func(tag, v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v} }
	boolean := func(b bool) *yaml.Node { return typed("!!bool", strconv.FormatBool(b)) }
	mapOf := func(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

	keys := mapOf()
	for _, kn := range e.Keys {
		list := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, k := range kn.Keys {
			list.Content = append(list.Content, typed("!!str", displayKey(k)))
		}
		keys.Content = append(keys.Content, str(kn.Name), list)
	}
	contexts := mapOf()
	names := make([]string, 0, len(e.Contexts))
	for name := range e.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cx := e.Contexts[name]
		m := mapOf(str("readOnly"), boolean(cx.ReadOnly))
		if cx.Namespace != "" {
			m.Content = append(m.Content, str("namespace"), typed("!!str", cx.Namespace))
		}
		contexts.Content = append(contexts.Content, typed("!!str", name), m)
	}
	if len(names) == 0 {
		contexts.Style = yaml.FlowStyle
	}
	wall := mapOf(str("tiles"), str(e.Wall.Tiles), str("columns"), typed("!!int", strconv.Itoa(e.Wall.Columns)),
		str("group"), str(e.Wall.Group), str("attention"), boolean(*e.Wall.Attention))
	doc := mapOf(str("theme"), typed("!!str", e.Theme), str("ascii"), boolean(e.ASCII),
		str("contexts"), contexts, str("keys"), keys, str("wall"), wall)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}
