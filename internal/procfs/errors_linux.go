package procfs

import "syscall"

var errESRCH error = syscall.ESRCH
