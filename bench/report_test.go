package bench_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
)

func sampleReport() bench.Report {
	return bench.Report{
		Title:    "ralphd benchmarks",
		Preamble: "Measured here.",
		Sections: []bench.Section{
			{
				Title: "1. Overhead",
				Figures: []bench.Figure{
					{ID: "1a", Name: "wall ÷ bd | calls", Value: "2.10×", Goal: "≤ 1.10", Verdict: bench.Judge(false), Command: "ralphd build 50"},
					{ID: "1b", Name: "bd calls per iteration", Value: "2.02", Goal: "≤ 3", Verdict: bench.Judge(true), Command: "ralphd build 50"},
					{ID: "1c", Name: "git calls", Value: "4", Command: "other\ncommand"},
				},
				Body: "Why it misses.",
			},
		},
	}
}

func TestMarkdown(t *testing.T) {
	is := is.New(t)
	md := sampleReport().Markdown()
	is.True(strings.HasPrefix(md, "# ralphd benchmarks\n\nMeasured here.\n"))
	is.True(strings.Contains(md, "| 1a | wall ÷ bd \\| calls | 2.10× | ≤ 1.10 | MISSED |\n")) // pipes escaped
	is.True(strings.Contains(md, "| 1b | bd calls per iteration | 2.02 | ≤ 3 | met |\n"))
	is.True(strings.Contains(md, "| 1c | git calls | 4 | - | - |\n"))                 // no goal
	is.Equal(strings.Count(md, "| 1a |"), 2)                                          // summary and section
	is.True(strings.Contains(md, "- 1a, 1b:\n\n  ```sh\n  ralphd build 50\n  ```\n")) // one command, listed once
	is.True(strings.Contains(md, "- 1c:\n\n  ```sh\n  other\n  command\n  ```\n"))
	is.True(strings.Contains(md, "## 1. Overhead\n"))
	is.True(strings.HasSuffix(md, "\nWhy it misses.\n"))
}

func TestTable(t *testing.T) {
	is := is.New(t)
	r := sampleReport()
	r.Sections[0].Figures[2].Name = strings.Repeat("long name ", 20)
	lines := strings.Split(strings.TrimRight(r.Table(), "\n"), "\n")
	is.Equal(len(lines), 4) // header and three figures
	is.True(strings.HasPrefix(lines[0], "#"))
	is.True(strings.Contains(lines[1], "MISSED"))
	is.True(strings.Contains(lines[2], "met"))
	is.True(strings.Contains(lines[3], "…")) // a long name is clipped
	is.True(!strings.Contains(lines[3], strings.Repeat("long name ", 8)))
}
