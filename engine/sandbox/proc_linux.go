package sandbox

import "syscall"

// procAttr puts a worker in a process group of its own, which kill ends
// whole, and has the kernel kill it should the runner die first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
