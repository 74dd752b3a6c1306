package secrets

import "github.com/runnerd/lambda-runner/engine/lang"

// The taint rule's entry points. What an expression may do with a secret
// is the language's rule (engine/lang/secret.go); where secrets are in
// scope, and whether a template reads them, is decided here, so that the
// engine and the node kinds ask one place.

// ReadsSecrets reports whether t reads secrets: names one (secrets.k) or
// picks one by a name computed at run time (secrets[k]). Such a template
// is evaluated with the secrets' shadows first (see Shadows).
func ReadsSecrets(t lang.Template) bool {
	names, all := t.Secrets()
	return len(names) > 0 || all
}

// Scope returns sc with the request's secret names in scope, for the
// fields of node that may use secrets.NAME (an http node's request).
func Scope(sc lang.Scope, names map[string]bool, node string) lang.Scope {
	sc.Secrets = names
	sc.Node = node
	return sc
}
