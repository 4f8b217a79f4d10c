package main

import (
	"embed"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// The license texts a file is matched against, one per file, named by the
// SPDX identifier; what follows a "+" names a part or a variant of that
// license (Apache-2.0+notice, the notice a file or a LICENSE may carry instead
// of the whole text). <<var>> stands for the words that vary from copy to
// copy: a name, a bullet.
//
//go:embed templates/*.txt
var templateFS embed.FS

// maxVarWords bounds what a <<var>> may stand for.
const maxVarWords = 20

// maxResidueWords is how many words of a license file may be left over once
// the licenses found in it and its copyright lines are taken away: a title
// ("The MIT License (MIT)"), a line saying which files which license covers.
// More than that is text nobody classified, and the file is reported.
const maxResidueWords = 40

type template struct {
	id    string // SPDX identifier
	name  string // file name without .txt
	words int
	re    *regexp.Regexp
}

var templates = mustLoadTemplates()

func mustLoadTemplates() []template {
	entries, err := templateFS.ReadDir("templates")
	if err != nil {
		panic(err)
	}
	var ts []template
	for _, e := range entries {
		b, err := templateFS.ReadFile(path.Join("templates", e.Name()))
		if err != nil {
			panic(err)
		}
		name := strings.TrimSuffix(e.Name(), ".txt")
		id, _, _ := strings.Cut(name, "+")
		var pat strings.Builder
		pat.WriteString(" ")
		n := 0
		for i, chunk := range strings.Split(string(b), "<<var>>") {
			if i > 0 {
				fmt.Fprintf(&pat, "(?:[^ ]+ ){0,%d}", maxVarWords)
			}
			for _, w := range normalize(chunk) {
				pat.WriteString(regexp.QuoteMeta(w.text) + " ")
				n++
			}
		}
		ts = append(ts, template{id: id, name: name, words: n, re: regexp.MustCompile(pat.String())})
	}
	// The longest first: a match of the whole Apache License takes the
	// words before its notice alone may.
	sort.Slice(ts, func(i, j int) bool { return ts[i].words > ts[j].words })
	return ts
}

type word struct {
	text string
	line int
}

// equivalent words: spellings that say the same thing.
var equivalent = map[string]string{
	"https":   "http",
	"licence": "license",
}

// normalize splits text into lower-case words of letters and digits; every
// other character separates words. Line numbers are kept so that the
// copyright lines can be told apart from the license's own words.
func normalize(text string) []word {
	var ws []word
	for ln, line := range strings.Split(text, "\n") {
		for _, f := range strings.FieldsFunc(strings.ToLower(line), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			if e, ok := equivalent[f]; ok {
				f = e
			}
			ws = append(ws, word{text: f, line: ln})
		}
	}
	return ws
}

// copyrightLine is a line of a license file that names its holders rather
// than its terms.
var copyrightLine = regexp.MustCompile(`(?i)^\W*(copyright|\(c\)|©|portions copyright)|all rights reserved`)

// classification is what classify found in one license file.
type classification struct {
	IDs     []string // SPDX identifiers found, sorted, each once
	Residue string   // words no license and no copyright line accounts for, when more than maxResidueWords
}

// classify finds which of the known licenses a license file holds.
func classify(text string) classification {
	ws := normalize(text)
	var doc strings.Builder
	starts := make([]int, len(ws)) // offset of each word in doc
	doc.WriteString(" ")
	for i, w := range ws {
		starts[i] = doc.Len()
		doc.WriteString(w.text + " ")
	}
	s := doc.String()

	covered := make([]bool, len(s))
	ids := map[string]bool{}
	for _, t := range templates {
		for _, m := range t.re.FindAllStringIndex(s, -1) {
			// m[0] is the space before the first word.
			free := true
			for i := m[0] + 1; i < m[1]; i++ {
				if covered[i] {
					free = false
					break
				}
			}
			if !free {
				continue
			}
			for i := m[0] + 1; i < m[1]; i++ {
				covered[i] = true
			}
			ids[t.id] = true
		}
	}

	lines := strings.Split(text, "\n")
	var residue []string
	for i, w := range ws {
		if covered[starts[i]] || copyrightLine.MatchString(lines[w.line]) {
			continue
		}
		residue = append(residue, w.text)
	}
	var c classification
	for id := range ids {
		c.IDs = append(c.IDs, id)
	}
	sort.Strings(c.IDs)
	if len(residue) > maxResidueWords || len(c.IDs) == 0 {
		c.Residue = strings.Join(residue, " ")
	}
	return c
}
