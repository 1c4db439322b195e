package capture

import "syscall"

// errESRCH is what reading a file of an exited process returns.
var errESRCH error = syscall.ESRCH
