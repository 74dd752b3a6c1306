//go:build !race

package engine

// raceDetector is set in a -race build (see race_on_test.go).
const raceDetector = false
