package models

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/protocol"
)

// Which providers a build holds is an operator's choice: each provider's
// file registers itself here, and the build tags noopenai, noanthropic and
// nobedrock leave one out (docs/deploy.md), with its SDK. Everything that
// names providers (validation, capabilities) asks this registry, so a
// build never advertises or accepts a provider it cannot call.

// knownProviders is every provider this package speaks, compiled in or
// not, in the order messages name them.
var knownProviders = []string{ProviderOpenAI, ProviderAnthropic, ProviderBedrock}

// builder makes the provider for a model entry from the shared clients.
type builder func(ctx context.Context, c *Clients, m protocol.Model) (Provider, error)

// builders holds the providers compiled in, by name. Written only by the
// providers' init functions, read-only afterwards.
var builders = map[string]builder{}

// register adds a compiled-in provider; called from init functions.
func register(name string, b builder) { builders[name] = b }

// Providers returns the names of the providers compiled into this build,
// sorted.
func Providers() []string {
	names := make([]string, 0, len(builders))
	for name := range builders {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// checkProvider returns why name cannot be used as a model entry's
// provider in this build, or "".
func checkProvider(name string) string {
	switch {
	case builders[name] != nil:
		return ""
	case name == "":
		return fmt.Sprintf("is required (%s)", providerList())
	case slices.Contains(knownProviders, name):
		return fmt.Sprintf("provider %q is not compiled into this runner (this build has %s)", name, providerList())
	}
	return fmt.Sprintf("unknown provider %q (want %s)", name, providerList())
}

// providerList names the compiled-in providers for messages: "openai,
// anthropic or bedrock".
func providerList() string {
	var names []string
	for _, name := range knownProviders {
		if builders[name] != nil {
			names = append(names, name)
		}
	}
	switch len(names) {
	case 0:
		return "none: this build has no model provider"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
