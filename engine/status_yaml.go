package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The recorded status's YAML, written by hand (Status.encode): quoted
// scalars and one-line JSON rows, with what YAML does not allow escaped.

// writeQuoted writes s as a double-quoted YAML scalar, escaping what YAML
// does not allow as it is (control characters, DEL, C1, line and paragraph
// separators, the byte order mark, invalid UTF-8).
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case yamlEscaped(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func yamlEscaped(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff
}

// writeJSONLine writes the row as a one-line JSON object (a YAML flow
// mapping), with what YAML does not allow as it is escaped.
func writeJSONLine(b *strings.Builder, r MemberRow) { writeJSON(b, r) }

// writeJSON writes v as one line of JSON (valid YAML in a flow), with what
// YAML does not allow as it is escaped.
func writeJSON(b *strings.Builder, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.WriteString("{}")
		return
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	for _, c := range out {
		if yamlEscaped(c) {
			fmt.Fprintf(b, `\u%04x`, c)
			continue
		}
		b.WriteRune(c)
	}
}
