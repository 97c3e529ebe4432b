//go:build !unix

package config

import "os/exec"

// setProcessGroup keeps the default cancellation, which kills the command's
// own process only: process groups are a Unix feature.
func setProcessGroup(cmd *exec.Cmd) {}
