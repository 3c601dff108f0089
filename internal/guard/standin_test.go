package guard

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

// aroundGuard is, for each protected field, the changes to it made around
// the guard beside its row's own (aroundGuardOps): with the real bd by its
// absolute path, or by editing bd's data (dataEdits, as an agent writing
// .beads/ directly would). "T" stands for the target issue, "P" for
// another one.
var aroundGuard = map[string][][]string{
	FieldIssue:        {{"delete", "T", "--force"}, {"edit-data: drop issue"}},
	FieldPriority:     {{"edit-data: priority"}},
	FieldStatus:       {{"update", "T", "--status", "deferred"}, {"update", "T", "--status", "pinned"}, {"edit-data: status"}},
	FieldParent:       {{"dep", "add", "T", "P", "--type", "parent-child"}},
	FieldLabels:       {{"label", "remove", "T", "keep"}, {"edit-data: drop labels"}},
	FieldDependencies: {{"dep", "remove", "T", "P"}, {"edit-data: drop dependencies"}},
	FieldComments:     {{"edit-data: drop comments"}},
	FieldReservedLabels: {{"label", "add", "T", StuckLabel}, {"update", "T", "--add-label", "x," + StuckLabel},
		{"edit-data: stuck label"}},
}

// aroundGuardOps returns the changes tried around the guard for a
// protected field: for a row with flags, `bd update T --<flag> <sample>`,
// so that a new row is tried without a new test; then aroundGuard's.
func aroundGuardOps(f protectedField) [][]string {
	var ops [][]string
	if f.scalar() {
		ops = append(ops, []string{"update", "T", "--" + f.revertFlag(), f.sample})
	}
	return append(ops, aroundGuard[f.name]...)
}

// TestProtectedFieldsAroundTheGuard walks the table of protected fields:
// for every field it first proves the guard refuses the change in BUILD,
// then makes it around the guard with the stand-in bd and proves Diff
// finds it, Revert undoes it and leaves a note.
func TestProtectedFieldsAroundTheGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stand-in bd")
	}
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range protectedFields {
		ops := aroundGuardOps(p)
		if len(ops) == 0 {
			t.Errorf("no change around the guard is tried for the protected field %q", p.name)
			continue
		}
		for _, op := range ops {
			t.Run(p.name+"/"+strings.Join(op, "_"), func(t *testing.T) {
				is := is.New(t)
				bd, target, other := seed(t, bin)
				argv := make([]string, len(op))
				for i, a := range op {
					argv[i] = map[string]string{"T": target, "P": other}[a]
					if argv[i] == "" {
						argv[i] = a
					}
				}
				if !strings.HasPrefix(op[0], "edit-data") {
					d := Decide(ModeBuild, argv)
					is.True(!d.Allowed) // the guard refuses it in BUILD
				}
				before := snap(t, bd)
				if edit, ok := dataEdits[op[0]]; ok {
					editData(t, bd.Dir, func(db map[string]any) { edit(db, target) })
				} else {
					_, err := bd.RunJSON(context.Background(), argv...)
					is.NoErr(err)
				}
				after := snap(t, bd)
				vs := Diff(before, after, Options{})
				is.True(len(vs) > 0) // the change is detected
				found := false
				for _, v := range vs {
					found = found || v.Rule == p.rule
				}
				is.True(found) // found under the rule the guard refuses it with
				for _, r := range Revert(context.Background(), bd, before, vs) {
					is.NoErr(r.Err)
				}
				restored := snap(t, bd)
				is.Equal(Diff(before, restored, Options{}), nil)                      // nothing forbidden is left
				is.True(strings.Contains(restored[target].Notes, "ralphd: reverted")) // a note on the issue
			})
		}
	}
}

func seed(t testing.TB, bin string) (*beads.Client, string, string) {
	t.Helper()
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "BEADS_ACTOR=tester"}
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	bd := &beads.Client{Bin: bin, Dir: dir, Env: env, Timeout: time.Minute}
	ctx := context.Background()
	if _, err := bd.RunJSON(ctx, "init", "--prefix", "tp", "--quiet"); err != nil {
		t.Fatal(err)
	}
	p := 2
	other, err := bd.Create(ctx, beads.CreateOptions{Title: "other", Priority: &p})
	if err != nil {
		t.Fatal(err)
	}
	target, err := bd.Create(ctx, beads.CreateOptions{Title: "the work", Priority: &p, Acceptance: "make test", Labels: []string{"keep"}, Deps: []string{other.ID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"first comment", "second comment"} {
		if err := bd.CommentAdd(ctx, target.ID, c); err != nil {
			t.Fatal(err)
		}
	}
	return bd, target.ID, other.ID
}

func snap(t testing.TB, bd *beads.Client) Snapshot {
	t.Helper()
	ctx := context.Background()
	issues, err := bd.List(ctx, beads.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range issues {
		if issues[i].CommentCount > 0 {
			if issues[i].Comments, err = bd.Comments(ctx, issues[i].ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	return NewSnapshot(issues)
}

// dataEdits are changes made by editing the stand-in's data file, as an
// agent editing bd's database would, to the target issue's fields, its
// edges, or every comment.
var dataEdits = map[string]func(db map[string]any, target string){
	"edit-data: drop comments":     func(db map[string]any, _ string) { db["comments"] = []any{} },
	"edit-data: drop dependencies": func(db map[string]any, _ string) { db["dependencies"] = []any{} },
	"edit-data: drop issue": func(db map[string]any, target string) {
		var kept []any
		for _, is := range db["issues"].([]any) {
			if is.(map[string]any)["id"] != target {
				kept = append(kept, is)
			}
		}
		db["issues"] = kept
	},
	"edit-data: priority":    setField("priority", 0),
	"edit-data: status":      setField("status", "deferred"),
	"edit-data: drop labels": setField("labels", []any{}),
	"edit-data: stuck label": setField("labels", []any{"keep", StuckLabel}),
}

// setField sets one field of the target issue in the stand-in's data.
func setField(name string, v any) func(db map[string]any, target string) {
	return func(db map[string]any, target string) {
		for _, is := range db["issues"].([]any) {
			if m := is.(map[string]any); m["id"] == target {
				m[name] = v
			}
		}
	}
}

// editData edits the stand-in's data file in place.
func editData(t *testing.T, dir string, edit func(db map[string]any)) {
	t.Helper()
	var matches []string
	_ = filepath.WalkDir(filepath.Join(dir, ".beads"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "standin.json" {
			matches = append(matches, path)
		}
		return nil
	})
	if len(matches) != 1 {
		t.Fatalf("want one stand-in data file, got %v", matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var db map[string]any
	if err := json.Unmarshal(b, &db); err != nil {
		t.Fatal(err)
	}
	edit(db)
	out, err := json.Marshal(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(matches[0], out, 0o644); err != nil {
		t.Fatal(err)
	}
}
