// Package config owns ctpool-tui's settings file: where it is (Locate:
// --config, else $CTPOOL_TUI_CONFIG, else $XDG_CONFIG_HOME/ctpool-tui/
// config.yaml, else ~/.config/ctpool-tui/config.yaml), its strict reading
// (Parse: an unknown key, a bad value, a key bound twice or an unknown
// action is an *Error naming the file and the line; a missing file at the
// conventional place is the defaults, a broken one never is), and its
// printing (Config.Write, for `ctpool-tui config view`). What the settings
// may name (themes, rebindable keys) is given by the caller in a Schema:
// this package imports neither tui nor themes. cmd/ctpool-tui applies the
// settings under the flags.
package config
