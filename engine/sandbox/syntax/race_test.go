//go:build race

package syntax

const raceEnabled = true
