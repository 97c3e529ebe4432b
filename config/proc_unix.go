//go:build unix

package config

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup runs cmd in a process group of its own and makes
// cancellation kill the whole group, so that the processes the command
// started die with it; where the system allows (Linux), the command is
// also killed when this process dies, even by SIGKILL.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
