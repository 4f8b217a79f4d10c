package main

import (
	"reflect"
	"strings"
	"testing"
)

const mitText = `The MIT License (MIT)

Copyright (c) 2020 Someone <someone@example.com>

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

func TestClassify(t *testing.T) {
	apache, err := templateFS.ReadFile("templates/Apache-2.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	notice, err := templateFS.ReadFile("templates/Apache-2.0+notice.txt")
	if err != nil {
		t.Fatal(err)
	}
	extra := " The Software shall be used for Good, not Evil, and its users shall send a postcard to the author every year they use it, which is a term no permissive license has, so it must not pass unread by anyone at all."
	for _, tc := range []struct {
		name    string
		text    string
		ids     []string
		residue bool
	}{
		{"mit", mitText, []string{"MIT"}, false},
		{"mit with crlf and reflowed", strings.ReplaceAll(strings.ReplaceAll(mitText, "\n", " \r\n"), "  ", " "), []string{"MIT"}, false},
		{"apache and a notice", "Copyright 2024 X\n\n" + string(notice) + "\n" + string(apache), []string{"Apache-2.0"}, false},
		{"mit with an added term", strings.Replace(mitText, "SOFTWARE.\n", "SOFTWARE."+extra+"\n", 1), []string{"MIT"}, true},
		{"mit with a word changed", strings.Replace(mitText, "free of charge", "for a fee", 1), nil, true},
		{"unknown", "Copyright 2020 X. All rights reserved.\nYou may not copy this.", nil, true},
		{"copyright alone", "Copyright 2020 X. All rights reserved.", nil, false}, // no license: the module is reported
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := classify(tc.text)
			if !reflect.DeepEqual(c.IDs, tc.ids) {
				t.Errorf("IDs = %v, want %v", c.IDs, tc.ids)
			}
			if (c.Residue != "") != tc.residue {
				t.Errorf("residue %q, want some: %v", c.Residue, tc.residue)
			}
		})
	}
}

// TestTemplatesClassifyAsThemselves: each license text, its variable words
// filled in, is classified as its own license and nothing else.
func TestTemplatesClassifyAsThemselves(t *testing.T) {
	for _, tp := range templates {
		b, err := templateFS.ReadFile("templates/" + tp.name + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		c := classify(strings.ReplaceAll(string(b), "<<var>>", "Some Name"))
		if !reflect.DeepEqual(c.IDs, []string{tp.id}) || c.Residue != "" {
			t.Errorf("%s: classified as %v, residue %q", tp.name, c.IDs, c.Residue)
		}
	}
}
