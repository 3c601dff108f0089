package agent

import "path/filepath"

// ForgeLogins lists where the user's forge logins live under h: gh's
// config dir (hosts.yml holds its token; $GH_CONFIG_DIR, else
// $XDG_CONFIG_HOME/gh, else ~/.config/gh, and ~/.config/gh whatever the
// variables say), the Gitea, GitLab and hub CLIs' config dirs (in
// $XDG_CONFIG_HOME and in ~/.config alike), git's
// credential store files and the credential cache's socket dirs, and
// ~/.netrc, which git and curl read for a host's password. With any of
// them a BUILD agent could approve or merge its own pull request
// (integrate = pr) or push where it likes, so the sandbox hides them all:
// the agent needs none of them, and ralphd's own pushes and forge calls
// run outside the sandbox. Dirs and files alike; missing ones too (the
// caller skips what does not exist). Unknown paths (no home) are left
// out.
func ForgeLogins(h Home) []string {
	config := h.xdg("XDG_CONFIG_HOME", ".config")
	cache := h.xdg("XDG_CACHE_HOME", ".cache")
	return nonEmpty([]string{
		h.absEnv("GH_CONFIG_DIR"),
		under(config, "gh"),
		h.in(filepath.Join(".config", "gh")),
		under(config, "tea"),
		under(config, "glab-cli"),
		under(config, "hub"),
		h.in(".git-credentials"),
		under(config, filepath.Join("git", "credentials")),
		// The same under ~/.config whatever XDG_CONFIG_HOME says: a login
		// written there before (or by a client that ignores it) is on
		// disk all the same.
		h.in(filepath.Join(".config", "tea")),
		h.in(filepath.Join(".config", "glab-cli")),
		h.in(filepath.Join(".config", "hub")),
		h.in(filepath.Join(".config", "git", "credentials")),
		h.in(".git-credential-cache"),
		under(cache, filepath.Join("git", "credential")),
		h.in(".netrc"),
	})
}
