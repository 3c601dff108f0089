package standin

import (
	"os"
	"path/filepath"
	"strings"
)

// bd's configuration files can name the database: a top-level "db" key
// works as --db does. bd 1.0.5 reads it in its root command
// (cmd/bd/main.go: dbPath = config.GetString("db") when neither --db,
// BEADS_DB, BD_DB nor BEADS_DIR is set), and every command then selects
// the .beads directory that path belongs to, `bd where` and `bd context`
// included (selectedNoDBBeadsDir). The files are merged as
// config.Initialize does, lowest priority first: ~/.beads/config.yaml,
// the user config dir's bd/config.yaml ($XDG_CONFIG_HOME, else
// ~/.config), ~/.config/bd/config.yaml, the project's .beads/config.yaml
// (the first found walking up from the working directory, or the main
// worktree's), and config.local.yaml beside it. A later file that sets
// the key wins, even to "".

// dbPath is the database path a command selects its workspace by: --db,
// else the configuration's "db" unless the environment selects one.
func (inv *invocation) dbPath() string {
	if db := inv.fl.str("db"); db != "" {
		return db
	}
	for _, k := range []string{"BEADS_DIR", "BEADS_DB", "BD_DB"} {
		if inv.env[k] != "" {
			return ""
		}
	}
	return inv.configDB()
}

// configDB returns the "db" key of bd's merged configuration, "" when
// no file sets it.
func (inv *invocation) configDB() string {
	var files []string
	home := inv.env["HOME"]
	if home != "" {
		files = append(files, filepath.Join(home, ".beads", "config.yaml"))
	}
	userDir := inv.env["XDG_CONFIG_HOME"]
	if userDir == "" && home != "" {
		userDir = filepath.Join(home, ".config")
	}
	if userDir != "" {
		files = append(files, filepath.Join(userDir, "bd", "config.yaml"))
	}
	if home != "" {
		if p := filepath.Join(home, ".config", "bd", "config.yaml"); !containsClean(files, p) {
			files = append(files, p)
		}
	}
	if p := projectConfig(inv.cwd); p != "" {
		files = append(files, p, filepath.Join(filepath.Dir(p), "config.local.yaml"))
	}
	db := ""
	for _, f := range files {
		if v, ok := yamlTopKey(f, "db"); ok {
			db = v
		}
	}
	return db
}

// projectConfig is the project's .beads/config.yaml as bd finds it: the
// first one walking up from dir, else the main worktree's; "" when none.
func projectConfig(dir string) string {
	for d := dir; ; {
		p := filepath.Join(d, beadsDirName, "config.yaml")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if main := worktreeMain(dir); main != "" {
		p := filepath.Join(main, beadsDirName, "config.yaml")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func containsClean(paths []string, p string) bool {
	for _, q := range paths {
		if filepath.Clean(q) == filepath.Clean(p) {
			return true
		}
	}
	return false
}

// yamlTopKey reads the scalar value of a top-level key from a YAML file:
// enough of YAML for bd's flat keys (a quoted or plain value, a trailing
// comment). ok is false when the file or the key is missing.
func yamlTopKey(path, key string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	val, found := "", false
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), key+":")
		if !ok {
			continue
		}
		v := strings.TrimSpace(rest)
		switch {
		case len(v) >= 2 && (v[0] == '"' || v[0] == '\''):
			if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
				v = v[1 : 1+end]
			}
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
			if strings.HasPrefix(v, "#") {
				v = ""
			}
		}
		val, found = v, true
	}
	return val, found
}
