//go:build race

package lang

// raceDetector is set in a -race build, where JSON work is many times
// slower: tests that move megabytes scale down.
const raceDetector = true
