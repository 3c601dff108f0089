package benchtest_test

import (
	"bytes"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/testkit/benchtest"
)

func TestIssuesJSONParses(t *testing.T) {
	tests := []struct {
		n, closedEvery, wantClosed int
	}{
		{n: 10, closedEvery: 0, wantClosed: 0},
		{n: 100, closedEvery: 4, wantClosed: 25},
		{n: 1, closedEvery: 1, wantClosed: 1},
		{n: 0, closedEvery: 0, wantClosed: 0},
	}
	for _, tt := range tests {
		is := is.New(t)
		data, err := benchtest.IssuesJSON(tt.n, tt.closedEvery)
		is.NoErr(err)
		issues, err := beads.ParseIssues(data)
		is.NoErr(err)
		is.Equal(len(issues), tt.n)
		closed := 0
		for _, i := range issues {
			if i.Status == beads.StatusClosed {
				closed++
				is.Equal(i.CloseReason, "go test ./... passes (exit 0)")
			}
		}
		is.Equal(closed, tt.wantClosed)
		again, err := benchtest.IssuesJSON(tt.n, tt.closedEvery)
		is.NoErr(err)
		is.True(bytes.Equal(data, again)) // deterministic
	}
	is := is.New(t)
	data, err := benchtest.IssuesJSON(50, 0)
	is.NoErr(err)
	issues, err := beads.ParseIssues(data)
	is.NoErr(err)
	is.Equal(issues[10].Parent, "rt-0000")
	is.Equal(len(issues[35].Dependencies), 2)
	is.Equal(issues[3].Labels, []string{"backend", "parser"})
}
