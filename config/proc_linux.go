package config

import "syscall"

// dieWithParent has the kernel SIGKILL the command when the thread that
// started it ends, which for a Go program (whose threads that start
// commands are never locked, so never end before it) is when the process
// dies.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
