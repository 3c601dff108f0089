package git

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/gitplant"
)

// With every kind of repository code planted at once (fsmonitor, hooks,
// filters, external diff, textconv), no operation of Repo runs any of it.
func TestPlantedCodeNeverRuns(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, markers := gitplant.Repo(t), t.TempDir()
	for _, r := range gitplant.Routes() {
		r.Plant(t, dir, markers)
	}
	r := Repo{Dir: dir}
	base, err := r.Head(ctx)
	is.NoErr(err)
	gitplant.Touch(t, dir)

	_, err = r.Branch(ctx)
	is.NoErr(err)
	_, err = r.Changed(ctx)
	is.NoErr(err)
	_, err = r.Dirty(ctx)
	is.NoErr(err)
	_, err = r.DiffHash(ctx)
	is.NoErr(err)
	_, err = r.Status(ctx)
	is.NoErr(err)
	_, err = r.Layout(ctx, ".ralph")
	is.NoErr(err)
	sha, err := r.FailureBranch(ctx, "wip/planted", "ralphd: keep the work", base)
	is.NoErr(err)
	is.True(sha != "") // the work was kept, through add, write-tree, commit-tree, branch, reset, restore, clean
	is.Equal(gitplant.Ran(t, markers), []string(nil))
}

// Status and FailureBranch each look the drivers up once for all their
// git calls (a Runner), and still run none of the planted code.
func TestOneDriversLookupPerStep(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, markers := gitplant.Repo(t), t.TempDir()
	for _, r := range gitplant.Routes() {
		r.Plant(t, dir, markers)
	}
	r := Repo{Dir: dir}
	base, err := r.Head(ctx)
	is.NoErr(err)
	gitplant.Touch(t, dir) // a tracked change: Status runs status and diff
	lookups := gitplant.CountLookups(t)

	st, err := r.Status(ctx)
	is.NoErr(err)
	is.True(len(st.Changed) > 0)
	is.Equal(lookups(), 1)

	sha, err := r.FailureBranch(ctx, "wip/step", "ralphd: keep the work", base)
	is.NoErr(err)
	is.True(sha != "")
	is.Equal(lookups(), 2) // one for dirty, add, write-tree, reset, restore and clean
	is.Equal(gitplant.Ran(t, markers), []string(nil))
}
