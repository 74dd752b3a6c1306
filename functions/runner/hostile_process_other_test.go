//go:build !linux

package main

import "testing"

// TestHostileProcess measures the runner and its workers in /proc
// (hostile_process_test.go).
func TestHostileProcess(t *testing.T) {
	t.Skip("measures the runner's and its workers' memory in /proc: Linux only")
}
