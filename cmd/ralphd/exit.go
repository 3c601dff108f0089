package main

// Exit codes. They are documented in README.md ("Exit codes"); the systemd
// unit's RestartPreventExitStatus lists the deliberate-stop ones.
const (
	exitOK          = 0   // done: all work complete or blocked, or the command succeeded
	exitError       = 1   // runtime error
	exitUsage       = 2   // usage or configuration error
	exitCap         = 3   // iteration cap (or budget) reached with ready work left
	exitLocked      = 4   // another ralphd holds this project's lock, or (plan) the planner lease of a shared tracker
	exitAgent       = 5   // agent unusable: not installed, not logged in, invalid key
	exitHeld        = 6   // no ready work left, but BUILD's changes held back work that was ready at the start
	exitInterrupted = 130 // interrupted by a signal
)
