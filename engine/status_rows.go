package engine

// The recorded status's member rows: the compact one-line form Encode writes
// and the object form of earlier releases that ParseStatus still reads.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// wireRow is one recorded row: a compact string or an object.
type wireRow struct {
	row  MemberRow
	ref  int // index into the message table, -1 for none
	like bool
}

func (w *wireRow) UnmarshalJSON(b []byte) error {
	w.ref = -1
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		row, ref, like, err := parseCompactRow(s)
		if err != nil {
			return err
		}
		w.row, w.ref, w.like = row, ref, like
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &w.row)
}

// The compact row: "<name> <State>[ expired][ maintenance][ drift]
// [ above-size][ msg=<i>| msg~<i>][ holder=<the rest>]". msg=i is the i-th
// message of the table, msg~i one in its words with other numbers.
const (
	tokExpired     = "expired"
	tokMaintenance = "maintenance"
	tokDrift       = "drift"
	tokAboveSize   = "above-size"
	tokHolder      = "holder="
)

func parseCompactRow(s string) (row MemberRow, ref int, like bool, err error) {
	ref = -1
	bad := func(why string) error {
		return fmt.Errorf("member row %q: %s", s, why)
	}
	name, rest, ok := strings.Cut(s, " ")
	if !ok || name == "" {
		return row, -1, false, bad("want <name> <state>")
	}
	state, rest, _ := strings.Cut(rest, " ")
	if !isStateWord(state) {
		return row, -1, false, bad("want <name> <state>")
	}
	row.Name, row.State = name, State(state)
	for rest != "" {
		if h, ok := strings.CutPrefix(rest, tokHolder); ok {
			row.Holder = h
			break
		}
		var tok string
		tok, rest, _ = strings.Cut(rest, " ")
		switch {
		case tok == tokExpired:
			row.ClaimExpired = true
		case tok == tokMaintenance:
			row.Maintenance = true
		case tok == tokDrift:
			row.Drift = true
		case tok == tokAboveSize:
			row.AboveSize = true
		case strings.HasPrefix(tok, "msg=") || strings.HasPrefix(tok, "msg~"):
			n, perr := strconv.Atoi(tok[4:])
			if perr != nil || n < 0 || ref >= 0 || strconv.Itoa(n) != tok[4:] {
				return row, -1, false, bad("bad message reference " + tok)
			}
			ref, like = n, tok[3] == '~'
		default:
			return row, -1, false, bad("unknown word " + strconv.Quote(tok))
		}
	}
	return row, ref, like, nil
}

func isStateWord(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// compactRow writes the row in the compact form with the message reference
// ref ("" for none); ok is false when the compact form cannot hold the row.
func compactRow(r MemberRow, ref string) (string, bool) {
	var b strings.Builder
	b.WriteString(r.Name)
	b.WriteByte(' ')
	b.WriteString(string(r.State))
	for _, f := range []struct {
		on  bool
		tok string
	}{{r.ClaimExpired, tokExpired}, {r.Maintenance, tokMaintenance}, {r.Drift, tokDrift}, {r.AboveSize, tokAboveSize}} {
		if f.on {
			b.WriteByte(' ')
			b.WriteString(f.tok)
		}
	}
	if ref != "" {
		b.WriteByte(' ')
		b.WriteString(ref)
	}
	if r.Holder != "" {
		b.WriteByte(' ')
		b.WriteString(tokHolder)
		b.WriteString(r.Holder)
	}
	s := b.String()
	back, _, _, err := parseCompactRow(s)
	want := r
	want.Message, want.MessageLike = "", false
	return s, err == nil && back == want
}

// plainRow reports whether a compact row can be written as a plain YAML
// scalar: it has a space and a capitalised state word (never a number, bool
// or null) and only characters with no meaning in YAML.
func plainRow(s string) bool {
	if s == "" || !isAlnum(s[0]) || s[len(s)-1] == ' ' || strings.Contains(s, "  ") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune(" ._/@=~+-", rune(c)) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
