//go:build race

package engine

// raceDetector is set in a -race build, where JSON work is many times
// slower: tests that move megabytes scale down.
const raceDetector = true
