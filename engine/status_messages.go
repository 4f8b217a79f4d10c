package engine

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// messageTable is the distinct messages of the rows written compactly, the
// most frequent first (ties: the first met), at most StatusMaxMessages.
type messageTable struct {
	texts []string
	index map[string]int
	shape map[string]int // the first entry of each shape
}

func buildMessageTable(rows []MemberRow) messageTable {
	type entry struct {
		text         string
		count, first int
	}
	seen := map[string]*entry{}
	var all []*entry
	for i, r := range rows {
		if r.Message == "" || r.MessageLike {
			continue
		}
		if _, ok := compactRow(r, ""); !ok {
			continue
		}
		t := cutText(r.Message, StatusMaxMessageBytes)
		if e := seen[t]; e != nil {
			e.count++
			continue
		}
		e := &entry{text: t, count: 1, first: i}
		seen[t] = e
		all = append(all, e)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].count != all[j].count {
			return all[i].count > all[j].count
		}
		return all[i].first < all[j].first
	})
	all = all[:min(len(all), StatusMaxMessages)]
	tab := messageTable{index: make(map[string]int, len(all)), shape: make(map[string]int, len(all))}
	for i, e := range all {
		tab.texts = append(tab.texts, e.text)
		tab.index[e.text] = i
		if _, ok := tab.shape[messageShape(e.text)]; !ok {
			tab.shape[messageShape(e.text)] = i
		}
	}
	return tab
}

// ref is the row's message reference ("" for none) and whether its message
// had to be left out.
func (t messageTable) ref(r MemberRow) (string, bool) {
	if r.Message == "" {
		return "", false
	}
	text := cutText(r.Message, StatusMaxMessageBytes)
	if i, ok := t.index[text]; ok {
		if r.MessageLike {
			return "msg~" + strconv.Itoa(i), false
		}
		return "msg=" + strconv.Itoa(i), false
	}
	if i, ok := t.shape[messageShape(text)]; ok {
		return "msg~" + strconv.Itoa(i), false
	}
	return "", true
}

// messageShape is a message with each run of digits replaced by '#': the
// scheduler's messages of one cause differ only in their node counts.
func messageShape(s string) string {
	var b strings.Builder
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteByte(c)
	}
	return b.String()
}

// cutText cuts s to at most n bytes at a character boundary, ending in "…".
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	end := n - len(ell)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ell
}
