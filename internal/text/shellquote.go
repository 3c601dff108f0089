// ShellQuote and ShellJoin quote words for a POSIX shell (sh, dash, bash): the
// rule is single quotes around any word that holds anything but plainly
// safe characters, with each ' written as '\”. It is for text ralphd
// writes for a shell to run: the bd wrapper script, hook commands, unit
// files' ExecStart lines, commands printed for the user to paste.

package text

import "strings"

// ShellQuote returns s as one shell word: s itself when it is non-empty and
// holds only letters, digits and @%+=:,./_-, and s in single quotes
// otherwise.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, unsafe) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellJoin quotes each element of argv with ShellQuote and joins them with spaces,
// so that a shell splits the result back into argv.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// unsafe reports whether r needs quoting.
func unsafe(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
}
