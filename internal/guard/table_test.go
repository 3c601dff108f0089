package guard

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestTable(t *testing.T) {
	is := is.New(t)
	rows := Table()
	find := func(cmd string) TableRow {
		for _, r := range rows {
			if r.Command == cmd {
				return r
			}
		}
		t.Fatalf("no row %q", cmd)
		return TableRow{}
	}
	is.Equal(find("bd ready").Build, "allowed")
	is.Equal(find("bd delete").Build, "refused")
	is.Equal(find("bd delete").Rule, RuleDelete)
	is.Equal(find("bd dep remove (rm)").Rule, RuleDepRemove)
	is.Equal(find("bd update").Build, "allowed (limited)")
	is.Equal(find("bd update --priority/-p").Rule, RulePriority)
	is.Equal(find("bd update --status/-s closed").Rule, RuleStatusClosed)
	is.Equal(find("bd close (done)").Build, "allowed (limited)")
	is.Equal(find("bd close without a non-empty --reason").Rule, RuleCloseReason)
	is.True(strings.Contains(find("bd update --priority/-p").Note, "Instead:"))
	for _, r := range rows {
		is.Equal(r.Plan == "refused", r.Rule == RuleForgeMerge) // PLAN allows every bd call, and no forge merge
		is.True(r.Note != "")
		is.True(r.Rule != "")
	}

	// Every BUILD rule appears in the table.
	for _, rule := range Rules() {
		if rule.ID == RulePlanAll || rule.ID == RuleUnknownMode {
			continue
		}
		is.True(slices.ContainsFunc(rows, func(r TableRow) bool { return r.Rule == rule.ID })) // rule in table
	}

	// The table agrees with Decide on the commands it lists.
	for _, r := range rows {
		if !strings.HasPrefix(r.Command, "bd ") || strings.ContainsAny(r.Command, "(-<") {
			continue
		}
		d := Decide(ModeBuild, strings.Fields(strings.TrimPrefix(r.Command, "bd ")))
		if r.Build == "refused" {
			is.True(!d.Allowed) // refused in the table, refused by Decide
		}
	}
}

func TestWriteTable(t *testing.T) {
	is := is.New(t)
	n := len(Table())

	var md bytes.Buffer
	is.NoErr(WriteTable(&md, TableMarkdown))
	lines := strings.Split(strings.TrimSuffix(md.String(), "\n"), "\n")
	is.Equal(len(lines), n+2) // header, separator, one line per row
	is.Equal(lines[0], "| command | BUILD | PLAN | rule | note |")
	for _, l := range lines[2:] {
		is.True(strings.HasPrefix(l, "| `bd") || strings.HasPrefix(l, "| `a") || forgeProg(strings.Fields(strings.TrimPrefix(l, "| `"))[0]))
		is.Equal(strings.Count(strings.ReplaceAll(l, `\|`, ""), "|"), 6) // five cells; pipes in text escaped
	}
	is.True(strings.Contains(md.String(), "open, in_progress, blocked"))

	var txt bytes.Buffer
	is.NoErr(WriteTable(&txt, TableText))
	is.Equal(strings.Count(txt.String(), "\n"), n+1)
	is.True(strings.HasPrefix(txt.String(), "COMMAND"))
	is.True(strings.Contains(txt.String(), "build-dep-remove"))

	is.True(WriteTable(&txt, TableFormat(9)) != nil)
}

func TestDenyPrefixes(t *testing.T) {
	is := is.New(t)
	prefixes := DenyPrefixes(ModeBuild)
	is.True(slices.IsSorted(prefixes))
	for _, want := range []string{"bd delete", "bd dep remove", "bd dep rm", "bd label remove", "bd sql"} {
		is.True(slices.Contains(prefixes, want)) // refused command present
	}
	// Every command the policy table refuses has its prefix.
	for _, p := range policy {
		if !p.allow && p.path != "" {
			is.True(slices.Contains(prefixes, "bd "+p.path)) // refused in the table, so denied in layer 2
		}
	}
	for _, p := range prefixes {
		words := strings.Fields(p)
		for _, mode := range []Mode{ModeBuild, ModePlan} {
			if words[0] == "bd" {
				if mode == ModeBuild {
					is.True(!Decide(mode, words[1:]).Allowed) // every prefix is refused by Decide: layer 2 never blocks what the guard allows
				}
				continue
			}
			d := forgeDecide(mode, words[0], staticArgs(words[1:]))
			is.Equal(d.Rule, RuleForgeMerge) // a forge prefix is refused in every mode
		}
	}
	// PLANNING's prefixes are the forge verbs only, each with its message.
	plan := DenyPrefixes(ModePlan)
	is.True(slices.Contains(plan, "gh pr merge"))
	is.True(slices.Contains(plan, "tea pulls approve"))
	for _, p := range plan {
		is.True(!strings.HasPrefix(p, "bd "))
		is.True(slices.Contains(prefixes, p))
		is.True(strings.Contains(DenyMessages()[p], "merge queue"))
	}
	is.Equal(DenyPrefixes(Mode("")), prefixes) // no valid mode: as strict as BUILD
}
