package tui

import (
	"reflect"
	"testing"

	"github.com/charmbracelet/bubbles/key"
)

// TestFullHelpListsEveryKey: every binding with a help text is in the full
// help, so that the help overlay shows every view's keys.
func TestFullHelpListsEveryKey(t *testing.T) {
	// Scroll is the log view's short form of up/down, which are listed.
	helpOnly := map[string]bool{"Scroll": true}
	k := newKeyMap(false, nil)
	inHelp := func(b key.Binding) bool {
		for _, col := range k.FullHelp() {
			for _, c := range col {
				if reflect.DeepEqual(c, b) {
					return true
				}
			}
		}
		return false
	}
	v := reflect.ValueOf(k)
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if !v.Type().Field(i).IsExported() {
			continue // the actions: below
		}
		b := v.Field(i).Interface().(key.Binding)
		if b.Help().Key == "" || helpOnly[name] {
			continue
		}
		if !inHelp(b) {
			t.Errorf("%s (%s %s) is not in the full help", name, b.Help().Key, b.Help().Desc)
		}
	}
	for _, ab := range k.actions {
		if !inHelp(ab.b) {
			t.Errorf("action %s (%s) is not in the full help", ab.act.name, ab.b.Help().Key)
		}
	}
}
