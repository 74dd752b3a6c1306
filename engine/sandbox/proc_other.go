//go:build !linux

package sandbox

import "syscall"

// procAttr puts a worker in a process group of its own, which kill ends
// whole.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
