package judge

import (
	"github.com/ralphd/ralphd/internal/text"
	"strconv"
	"strings"
)

// Check is one acceptance command taken from an issue's acceptance
// criteria: run Command, and the criterion holds when it exits ExpectExit.
type Check struct {
	Criterion  string // the human description, list marker and checkbox removed
	Command    string // the shell command, backticks removed
	ExpectExit int    // the expected exit status, 0 when the row gives none
	Line       int    // 1-based line of the row in the criteria text
}

var (
	listMarkerRe = text.LazyRegexp(`^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?`)
	checkboxRe   = text.LazyRegexp(`^\[[ xX]\]\s*`)
	separatorRe  = text.LazyRegexp(`^:?-+:?$`)
	exitRe       = text.LazyRegexp(`(?i)^(?:(?:exits?|exit[ -]?(?:code|status)|returns?|code|status)\s*(?:with\s+)?(?:code\s+)?[:=]?\s*)?(\d{1,3})(?:\s*(?:\(.*\))?)?$`)
	manualRe     = text.LazyRegexp(`(?i)^(manual|n/?a|none|tbd|todo|-|—|–)$`)
)

// ParseAcceptance extracts the acceptance commands from an issue's
// acceptance criteria. It reads rows of the form
//
//	criterion | command | expected exit
//
// as the beads-loop method writes them: either as a checklist
// (`- [ ] Unit tests pass | `npm test` | exit 0`) or as a markdown table,
// with or without leading and trailing pipes. Rules:
//
//   - Header rows (the row before a `|---|---|` separator) and separator
//     rows are skipped.
//   - A pipe inside backticks, or escaped as `\|`, does not split cells.
//   - A command wrapped in backticks is unwrapped. A command with text
//     around its backticks, or `MANUAL`, gives no check.
//   - A row with two cells is `criterion | command`, expecting exit 0, and
//     its command must be in backticks (so prose with one pipe is not run).
//   - In a row with three cells the third is the expected exit: an integer
//     0-255, optionally written `exit 1`, `exit code 2`, `exits 0`, with a
//     trailing parenthetical. Empty means 0. Anything else (expected output
//     such as `{"status":"ok"}`) gives no check, since only exit statuses
//     are verified.
//   - Rows with more than three cells, and all other text, give no checks.
//
// It never fails; criteria without such rows give nil.
func ParseAcceptance(criteria string) []Check {
	lines := strings.Split(criteria, "\n")
	var checks []Check
	prevRow := -1 // index into checks of the row on the previous line, or -1
	for i, raw := range lines {
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		cells, ok := splitRow(line)
		if !ok {
			prevRow = -1
			continue
		}
		if isSeparator(cells) {
			if prevRow >= 0 {
				checks = checks[:prevRow] // that row was a header
			}
			prevRow = -1
			continue
		}
		c, ok := rowCheck(cells)
		if !ok {
			prevRow = -1
			continue
		}
		c.Line = i + 1
		checks = append(checks, c)
		prevRow = len(checks) - 1
	}
	return checks
}

// splitRow splits a table row on pipes outside backticks. It reports false
// for a line without such a pipe. Leading and trailing pipes and a list
// marker are removed.
func splitRow(line string) ([]string, bool) {
	if !strings.Contains(line, "|") {
		return nil, false
	}
	line = listMarkerRe.ReplaceAllString(line, "")
	var cells []string
	var cur strings.Builder
	tick := 0 // length of the open backtick run, 0 outside code
	pipes := 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			n := 1
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			switch {
			case tick == 0:
				tick = n
			case tick == n:
				tick = 0
			}
			cur.WriteString(line[i : i+n])
			i += n - 1
		case c == '|' && tick == 0:
			pipes++
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	cells = append(cells, strings.TrimSpace(cur.String()))
	if pipes == 0 {
		return nil, false
	}
	if strings.HasPrefix(line, "|") {
		cells = cells[1:]
	}
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, "\\|") && len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	return cells, true
}

func isSeparator(cells []string) bool {
	if len(cells) == 0 {
		return false
	}
	for _, c := range cells {
		if !separatorRe.MatchString(strings.ReplaceAll(c, " ", "")) {
			return false
		}
	}
	return true
}

func rowCheck(cells []string) (Check, bool) {
	if len(cells) < 2 || len(cells) > 3 {
		return Check{}, false
	}
	criterion := strings.TrimSpace(checkboxRe.ReplaceAllString(cells[0], ""))
	cmd, quoted, ok := unwrapCommand(cells[1])
	if !ok || criterion == "" {
		return Check{}, false
	}
	expect := 0
	if len(cells) == 2 {
		if !quoted {
			return Check{}, false
		}
	} else if e := strings.Trim(strings.TrimSpace(cells[2]), "`*_"); e != "" {
		m := exitRe.FindStringSubmatch(e)
		if m == nil {
			return Check{}, false
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 255 {
			return Check{}, false
		}
		expect = n
	}
	return Check{Criterion: criterion, Command: cmd, ExpectExit: expect}, true
}

// unwrapCommand returns the command in a cell, whether it was in
// backticks, and false when the cell holds no runnable command.
func unwrapCommand(cell string) (string, bool, bool) {
	cell = strings.TrimSpace(cell)
	if cell == "" {
		return "", false, false
	}
	quoted := false
	if strings.HasPrefix(cell, "`") {
		n := len(cell) - len(strings.TrimLeft(cell, "`"))
		fence := cell[:n]
		if len(cell) < 2*n+1 || !strings.HasSuffix(cell, fence) || strings.HasSuffix(cell[:len(cell)-n], "`") {
			return "", false, false
		}
		inner := cell[n : len(cell)-n]
		if strings.Contains(inner, fence) {
			return "", false, false // `a` and `b`: text between two spans
		}
		cell = strings.TrimSpace(inner)
		quoted = true
	} else if strings.Contains(cell, "`") {
		return "", false, false
	}
	if cell == "" || manualRe.MatchString(cell) || strings.ContainsAny(cell, "\n\x00") {
		return "", false, false
	}
	return cell, quoted, true
}
