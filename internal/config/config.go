package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EnvVar names the settings file when --config does not.
const EnvVar = "CTPOOL_TUI_CONFIG"

// Config is the settings file as read: what it sets (the zero value of a
// field: not set, the default applies).
type Config struct {
	// Path is the file read ("" when none was: the defaults).
	Path string
	// Theme names a theme ("" : not set).
	Theme string
	// ASCII: plain glyphs (nil: not set).
	ASCII *bool
	// Keys rebinds keys: a Schema key name to its keys, in bubbletea's
	// names ("space" for the space bar).
	Keys map[string][]string
	// Contexts are the settings of kubeconfig contexts, by name.
	Contexts map[string]Context
	// Wall is the wall display's layout.
	Wall Wall
}

// Context is what the settings say of one kubeconfig context.
type Context struct {
	// ReadOnly: the dashboard on this context is read-only, as with
	// --readonly.
	ReadOnly bool
	// Namespace is its default namespace (before the kubeconfig's; -n
	// overrides it).
	Namespace string
}

// Wall is the wall display's layout; "" and 0 are automatic.
type Wall struct {
	Tiles   string // "small", "large"
	Columns int
	Group   string // "pools", "clusters"
	// Attention: show NEEDS ATTENTION (nil: not set, shown).
	Attention *bool
}

// The values the wall's settings take.
var (
	WallTiles  = []string{"auto", "small", "large"}
	WallGroups = []string{"auto", "pools", "clusters"}
)

// Schema is what the settings may name, given by the program.
type Schema struct {
	// Themes are the theme names accepted (besides "auto").
	Themes []string
	// Keys are the bindings that may be rebound.
	Keys []KeyName
	// ValidKey reports whether a key is one the terminal can send.
	ValidKey func(string) bool
}

// KeyName is a rebindable binding (tui.KeyName).
type KeyName struct {
	Name string
	// Keys are its keys by default.
	Keys []string
	// Groups are where its keys are live at once: within a group no two
	// bindings share a key.
	Groups []string
	// Fixed: it cannot be rebound.
	Fixed bool
}

// Error is a settings file that cannot be used: its path, the line (0:
// none) and what is wrong.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("settings %s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("settings %s: %s", e.Path, e.Msg)
}

// Location is where the settings file is, and why there.
type Location struct {
	Path string
	// Named: --config or $CTPOOL_TUI_CONFIG named it (then a missing file
	// is an error); else it is the conventional place (a missing file is
	// the defaults).
	Named bool
	// From says where the path comes from: "--config", "$CTPOOL_TUI_CONFIG",
	// "$XDG_CONFIG_HOME" or "the default".
	From string
}

// Locate finds the settings file: flag (--config), else $CTPOOL_TUI_CONFIG,
// else $XDG_CONFIG_HOME/ctpool-tui/config.yaml (an absolute
// XDG_CONFIG_HOME only, as the XDG base directory rules say), else
// ~/.config/ctpool-tui/config.yaml.
func Locate(flag string, getenv func(string) string, home func() (string, error)) (Location, error) {
	if flag != "" {
		return Location{Path: flag, Named: true, From: "--config"}, nil
	}
	if p := getenv(EnvVar); p != "" {
		return Location{Path: p, Named: true, From: "$" + EnvVar}, nil
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return Location{Path: filepath.Join(x, "ctpool-tui", "config.yaml"), From: "$XDG_CONFIG_HOME"}, nil
	}
	h, err := home()
	if err != nil || h == "" {
		return Location{}, fmt.Errorf("no home directory to find the settings in (set %s or XDG_CONFIG_HOME): %v", EnvVar, err)
	}
	return Location{Path: filepath.Join(h, ".config", "ctpool-tui", "config.yaml"), From: "the default"}, nil
}

// Load reads the settings at loc: a missing file at the conventional place
// is the defaults (a Config with no Path); a missing named file, an
// unreadable or a broken one is an error.
func Load(loc Location, s Schema) (*Config, error) {
	data, err := os.ReadFile(loc.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !loc.Named:
		return &Config{}, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{Path: loc.Path, Msg: "no such file (named by " + loc.From + ")"}
	case err != nil:
		return nil, &Error{Path: loc.Path, Msg: err.Error()}
	}
	return Parse(loc.Path, data, s)
}

// yamlLine matches the line yaml.v3 names in its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse reads the settings in data (from the file path, for the errors).
func Parse(path string, data []byte, s Schema) (*Config, error) {
	c := &Config{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return c, nil // empty: the defaults
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return nil, &Error{Path: path, Line: line, Msg: "not YAML: " + msg}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		line := more.Line
		if len(more.Content) > 0 {
			line = more.Content[0].Line
		}
		if err != nil {
			line = 0
		}
		return nil, &Error{Path: path, Line: line, Msg: "more than one YAML document"}
	}
	p := parser{path: path, schema: s, c: c, keyLines: map[string]int{}}
	if err := p.top(&doc); err != nil {
		return nil, err
	}
	if err := p.checkKeys(); err != nil {
		return nil, err
	}
	return c, nil
}

type parser struct {
	path     string
	schema   Schema
	c        *Config
	keyLines map[string]int // the line of each key binding set
}

func (p *parser) errAt(n *yaml.Node, format string, a ...any) error {
	return &Error{Path: p.path, Line: n.Line, Msg: fmt.Sprintf(format, a...)}
}

// deref follows an alias to its node.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapping walks the mapping n, in order, refusing a key it holds twice
// and a key not in known; what is where the YAML is (context names, key
// bindings) passes a nil known.
func (p *parser) mapping(n *yaml.Node, what string, known []string, each func(key string, k, v *yaml.Node) error) error {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "%s must be a mapping of keys to values", what)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return p.errAt(k, "%s: a key must be a plain word", what)
		}
		if k.Tag == "!!merge" {
			return p.errAt(k, "%s: merge keys (<<) are not supported", what)
		}
		if first, ok := seen[k.Value]; ok {
			return p.errAt(k, "%s: %q is set twice (first on line %d)", what, k.Value, first)
		}
		seen[k.Value] = k.Line
		if known != nil && !slices.Contains(known, k.Value) {
			return p.errAt(k, "%s: unknown key %q (known: %s)", what, k.Value, strings.Join(known, ", "))
		}
		if err := each(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) top(doc *yaml.Node) error {
	root := doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	return p.mapping(root, "the settings", []string{"theme", "ascii", "keys", "contexts", "wall"}, func(key string, _, v *yaml.Node) error {
		var err error
		switch key {
		case "theme":
			p.c.Theme, err = p.oneOf(v, "theme", append([]string{"auto"}, p.schema.Themes...))
		case "ascii":
			var b bool
			b, err = p.boolean(v, "ascii")
			p.c.ASCII = &b
		case "keys":
			err = p.keys(v)
		case "contexts":
			err = p.contexts(v)
		case "wall":
			err = p.wall(v)
		}
		return err
	})
}

// str is a scalar string value.
func (p *parser) str(v *yaml.Node, what string) (string, error) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", p.errAt(v, "%s must be a word", what)
	}
	return v.Value, nil
}

func (p *parser) oneOf(v *yaml.Node, what string, allowed []string) (string, error) {
	s, err := p.str(v, what)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", p.errAt(v, "%s: %q is not one of %s", what, s, strings.Join(allowed, ", "))
	}
	return s, nil
}

func (p *parser) boolean(v *yaml.Node, what string) (bool, error) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		return false, p.errAt(v, "%s must be true or false (got %q)", what, v.Value)
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return false, p.errAt(v, "%s: %v", what, err)
	}
	return b, nil
}

func (p *parser) contexts(v *yaml.Node) error {
	p.c.Contexts = map[string]Context{}
	return p.mapping(v, "contexts", nil, func(name string, k, cv *yaml.Node) error {
		if name == "" {
			return p.errAt(k, "contexts: a context needs a name")
		}
		var c Context
		what := "context " + strconv.Quote(name)
		err := p.mapping(cv, what, []string{"readOnly", "namespace"}, func(key string, _, v *yaml.Node) error {
			var err error
			switch key {
			case "readOnly":
				c.ReadOnly, err = p.boolean(v, what+": readOnly")
			case "namespace":
				c.Namespace, err = p.str(v, what+": namespace")
				if err == nil {
					if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
						err = p.errAt(v, "%s: namespace %q is not a namespace name: %s", what, c.Namespace, strings.Join(errs, "; "))
					}
				}
			}
			return err
		})
		p.c.Contexts[name] = c
		return err
	})
}

func (p *parser) wall(v *yaml.Node) error {
	return p.mapping(v, "wall", []string{"tiles", "columns", "group", "attention"}, func(key string, _, v *yaml.Node) error {
		var err error
		switch key {
		case "tiles":
			p.c.Wall.Tiles, err = p.oneOf(v, "wall: tiles", WallTiles)
		case "group":
			p.c.Wall.Group, err = p.oneOf(v, "wall: group", WallGroups)
		case "columns":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				return p.errAt(v, "wall: columns must be a whole number (0: as many as fit)")
			}
			n, perr := strconv.Atoi(v.Value)
			if perr != nil || n < 0 || n > 64 {
				return p.errAt(v, "wall: columns must be from 0 (as many as fit) to 64 (got %s)", v.Value)
			}
			p.c.Wall.Columns = n
		case "attention":
			var b bool
			b, err = p.boolean(v, "wall: attention")
			p.c.Wall.Attention = &b
		}
		return err
	})
}

// keyName is the schema's binding of this name (nil: none).
func (p *parser) keyName(name string) *KeyName {
	for i := range p.schema.Keys {
		if p.schema.Keys[i].Name == name {
			return &p.schema.Keys[i]
		}
	}
	return nil
}

func (p *parser) keyNames() []string {
	var out []string
	for _, k := range p.schema.Keys {
		if !k.Fixed {
			out = append(out, k.Name)
		}
	}
	return out
}

// keys reads the key bindings: each a key or a list of keys.
func (p *parser) keys(v *yaml.Node) error {
	p.c.Keys = map[string][]string{}
	return p.mapping(v, "keys", nil, func(name string, k, v *yaml.Node) error {
		kn := p.keyName(name)
		switch {
		case kn == nil:
			return p.errAt(k, "keys: unknown action %q (actions: %s)", name, strings.Join(p.keyNames(), ", "))
		case kn.Fixed:
			return p.errAt(k, "keys: %s (%s) cannot be rebound", name, strings.Join(kn.Keys, "/"))
		}
		var list []*yaml.Node
		switch v.Kind {
		case yaml.ScalarNode:
			list = []*yaml.Node{v}
		case yaml.SequenceNode:
			list = v.Content
		default:
			return p.errAt(v, "keys: %s must be a key or a list of keys", name)
		}
		if len(list) == 0 {
			return p.errAt(v, "keys: %s has no key (it would be unreachable)", name)
		}
		var keys []string
		for _, e := range list {
			e = deref(e)
			if e.Kind != yaml.ScalarNode || e.Tag == "!!null" {
				return p.errAt(e, "keys: %s: a key must be a word such as x, R, ctrl+r or f5", name)
			}
			key := e.Value
			if !p.schema.ValidKey(key) {
				return p.errAt(e, "keys: %s: %q is not a key (a character such as x or R, or a key name such as ctrl+r, alt+x, enter, space, f5)", name, key)
			}
			if slices.Contains(keys, key) {
				return p.errAt(e, "keys: %s: %q is listed twice", name, key)
			}
			keys = append(keys, key)
		}
		p.c.Keys[name] = keys
		p.keyLines[name] = k.Line
		return nil
	})
}

// checkKeys refuses two bindings of a group on one key, with the rebound
// keys in place: the error names the line of the binding set in the file
// (the later one when both are).
func (p *parser) checkKeys() error {
	if len(p.c.Keys) == 0 {
		return nil
	}
	type owner struct {
		name string
		line int
	}
	groups := map[string]map[string]owner{}
	// The bindings set in the file last, in file order: a clash is then
	// reported on the line that made it.
	order := slices.Clone(p.schema.Keys)
	slices.SortStableFunc(order, func(a, b KeyName) int { return p.keyLines[a.Name] - p.keyLines[b.Name] })
	for _, kn := range order {
		keys, line := kn.Keys, p.keyLines[kn.Name]
		if set, ok := p.c.Keys[kn.Name]; ok {
			keys = set
		}
		for _, g := range kn.Groups {
			if groups[g] == nil {
				groups[g] = map[string]owner{}
			}
			for _, key := range keys {
				prev, taken := groups[g][key]
				if !taken {
					groups[g][key] = owner{kn.Name, line}
					continue
				}
				if line == 0 { // two defaults: the schema's own clash
					return &Error{Path: p.path, Msg: fmt.Sprintf("keys: %q is both %s's and %s's", key, prev.name, kn.Name)}
				}
				how := fmt.Sprintf("rebind %s too, or choose another key", prev.name)
				if p.keyName(prev.name).Fixed {
					how = prev.name + " cannot be rebound"
				} else if prev.line > 0 {
					how = fmt.Sprintf("%s is set on line %d", prev.name, prev.line)
				}
				return &Error{Path: p.path, Line: line, Msg: fmt.Sprintf("keys: %s: %q is already %s's key (%s)", kn.Name, displayKey(key), prev.name, how)}
			}
		}
	}
	return nil
}

// displayKey shows a key as the settings write it.
func displayKey(k string) string {
	if k == " " {
		return "space"
	}
	return k
}
