package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/guard"
)

// TestReadmeMatchesCode keeps the docs honest: docs/security.md's policy
// table is the one the code enforces, and README.md documents every
// configuration key, command and exit code.
func TestReadmeMatchesCode(t *testing.T) {
	is := is.New(t)
	data, err := os.ReadFile("../../README.md")
	is.NoErr(err)
	readme := string(data)
	data, err = os.ReadFile("../../docs/security.md")
	is.NoErr(err)
	security := string(data)

	var policy bytes.Buffer
	is.NoErr(guard.WriteTable(&policy, guard.TableMarkdown))
	is.True(strings.Contains(security, strings.TrimSpace(policy.String()))) // docs/security.md: regenerate with `ralphd policy --markdown`

	for _, f := range config.Fields() {
		if !strings.Contains(readme, "| `"+f.Key+"` |") {
			t.Errorf("README's configuration table lacks %s", f.Key)
		}
	}
	for _, c := range commands() {
		if c.name == "hook" || c.name == "help" || c.name == "version" || c.name == "agents" || c.name == "migrate" {
			continue
		}
		if !strings.Contains(readme, "ralphd "+c.name) {
			t.Errorf("README never shows `ralphd %s`", c.name)
		}
	}
	for _, code := range []string{"| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 5 |", "| 6 |", "| 130 |"} {
		is.True(strings.Contains(readme, code)) // every exit code is documented
	}
}

// TestHelpListsCommands checks `ralphd help` output against the table.
func TestHelpListsCommands(t *testing.T) {
	is := is.New(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"ralphd", "help"}, nil, &out, &errb)
	is.Equal(code, 0)
	for _, c := range commands() {
		is.True(strings.Contains(out.String(), "  "+c.name+" ")) // every command is listed
	}
}
