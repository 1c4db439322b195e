package collect

import "github.com/memdoctor/memdoctor/internal/procfs"

func isPerm(err error) bool { return procfs.IsPermission(err) }
func isGone(err error) bool { return procfs.IsNotExist(err) }
