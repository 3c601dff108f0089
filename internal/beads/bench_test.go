package beads_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// readyJSON generates bd ready --json output with n issues in the shape
// of the ready-mixed fixture: every third issue has labels, every fifth a
// parent-child edge and every seventh a blocks edge.
func readyJSON(tb testing.TB, n int) []byte {
	tb.Helper()
	type edge struct {
		IssueID     string `json:"issue_id"`
		DependsOnID string `json:"depends_on_id"`
		Type        string `json:"type"`
		CreatedAt   string `json:"created_at"`
		CreatedBy   string `json:"created_by"`
		Metadata    string `json:"metadata"`
	}
	type item struct {
		ID                 string   `json:"id"`
		Title              string   `json:"title"`
		Description        string   `json:"description,omitempty"`
		AcceptanceCriteria string   `json:"acceptance_criteria,omitempty"`
		Status             string   `json:"status"`
		Priority           int      `json:"priority"`
		IssueType          string   `json:"issue_type"`
		Owner              string   `json:"owner"`
		CreatedAt          string   `json:"created_at"`
		CreatedBy          string   `json:"created_by"`
		UpdatedAt          string   `json:"updated_at"`
		Labels             []string `json:"labels,omitempty"`
		Dependencies       []edge   `json:"dependencies,omitempty"`
		Parent             string   `json:"parent,omitempty"`
		DependencyCount    int      `json:"dependency_count"`
		DependentCount     int      `json:"dependent_count"`
		CommentCount       int      `json:"comment_count"`
	}
	base := time.Date(2026, 11, 21, 18, 31, 42, 0, time.UTC)
	items := make([]item, n)
	for i := range items {
		ts := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		it := item{
			ID:                 fmt.Sprintf("rt-%04x", i),
			Title:              fmt.Sprintf("Issue number %d", i),
			Description:        "Parse the YAML config file into a struct.",
			AcceptanceCriteria: "Unit tests cover all keys; invalid YAML returns error",
			Status:             beads.StatusOpen,
			Priority:           i % 5,
			IssueType:          "task",
			Owner:              "test@example.com",
			CreatedAt:          ts,
			CreatedBy:          "Test User",
			UpdatedAt:          ts,
		}
		if i%3 == 0 {
			it.Labels = []string{"backend", "parser"}
		}
		if i%5 == 0 && i > 0 {
			it.Parent = "rt-0000"
			it.Dependencies = append(it.Dependencies, edge{it.ID, "rt-0000", beads.DepParentChild, ts, "Test User", "{}"})
		}
		if i%7 == 0 && i > 0 {
			it.Dependencies = append(it.Dependencies, edge{it.ID, "rt-0001", "related", ts, "Test User", "{}"})
		}
		it.DependencyCount = len(it.Dependencies)
		items[i] = it
	}
	data, err := json.MarshalIndent(items, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func BenchmarkParseReady(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("issues=%d", n), func(b *testing.B) {
			data := readyJSON(b, n)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				issues, err := beads.ParseIssues(data)
				if err != nil || len(issues) != n {
					b.Fatalf("parse: %d issues, %v", len(issues), err)
				}
			}
		})
	}
}

func TestReadyJSONParses(t *testing.T) {
	is := is.New(t)
	// The benchmark's input is valid ready output.
	issues, err := beads.ParseIssues(readyJSON(t, 50))
	is.NoErr(err)
	is.Equal(len(issues), 50)
	is.Equal(issues[10].Parent, "rt-0000")
	is.Equal(len(issues[35].Dependencies), 2)
	is.Equal(issues[3].Labels, []string{"backend", "parser"})
}
