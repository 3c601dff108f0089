package modes

import (
	"strings"
	"testing"
)

func TestIntegratedCommits(t *testing.T) {
	const a, b = "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, notes string
		want        []string
	}{
		{"none", "", nil},
		{"one", "ralphd: integrated into origin/main at " + a, []string{a}},
		{"among other notes", "STUCK: x\nralphd: integrated into origin/main at " + a + "\nmore\nralphd: integrated into up/trunk at " + b + "\n", []string{a, b}},
		{"not at the start of a line", "see ralphd: integrated into origin/main at " + a, nil},
		{"short id", "ralphd: integrated into origin/main at 0123abc", nil},
		{"trailing words", "ralphd: integrated into origin/main at " + a + " (not)", nil},
		{"upper case", "ralphd: integrated into origin/main at " + strings.ToUpper(a), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := integratedCommits(tc.notes)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("integratedCommits(%q) = %v, want %v", tc.notes, got, tc.want)
			}
		})
	}
}

// FuzzIntegratedCommits: any notes text; every commit found is a full
// lower-case hex id that the text holds on a line of its own note.
func FuzzIntegratedCommits(f *testing.F) {
	f.Add("ralphd: integrated into origin/main at 0123456789abcdef0123456789abcdef01234567\n")
	f.Add("x\nralphd: integrated into a b at 0123456789abcdef0123456789abcdef01234567 \n")
	f.Fuzz(func(t *testing.T, notes string) {
		for _, c := range integratedCommits(notes) {
			if len(c) != 40 && len(c) != 64 {
				t.Fatalf("%q is not a full commit id", c)
			}
			if strings.Trim(c, "0123456789abcdef") != "" {
				t.Fatalf("%q is not lower-case hex", c)
			}
			if !strings.Contains(notes, "ralphd: integrated into ") || !strings.Contains(notes, c) {
				t.Fatalf("%q is not in the notes", c)
			}
		}
	})
}
