package gitearunner

import (
	"reflect"
	"testing"
)

func TestParseSteps(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Step
		err      bool
	}{
		{"run and uses", "name: ci\njobs:\n  test:\n    runs-on: x\n    steps:\n      - name: a\n        run: |\n          echo 1\n          exit 1\n      - uses: actions/checkout@v4\n",
			[]Step{{Job: "test", Name: "a", Run: "echo 1\nexit 1\n"}, {Job: "test", Uses: "actions/checkout@v4"}}, false},
		{"no steps", "jobs:\n  test:\n    runs-on: x\n", nil, false},
		{"two jobs", "jobs:\n  a: {}\n  b: {}\n", nil, true},
		{"no jobs", "on: push\n", nil, true},
		{"not yaml", "jobs: [", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSteps([]byte(tc.in))
			if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseSteps = %#v, %v; want %#v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func FuzzParseSteps(f *testing.F) {
	f.Add([]byte("jobs:\n  t:\n    steps:\n      - run: echo\n"))
	f.Add([]byte("jobs: {a: {steps: [{uses: x}]}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		steps, err := ParseSteps(b)
		if err != nil {
			return
		}
		for _, s := range steps {
			if s.Job != steps[0].Job {
				t.Fatalf("steps of different jobs: %#v", steps)
			}
		}
	})
}
