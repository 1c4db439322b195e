package collect

func init() { register(70, "uname", false, collectUname) }

func readTrim(c *ctx, name string) string {
	v, err := c.fs.ReadTrimmed(name)
	if err != nil {
		return ""
	}
	return v
}

func collectUname(c *ctx) error {
	rel, err := c.fs.KernelRelease()
	if err != nil {
		return err
	}
	c.add("node_uname_info", 1,
		"sysname", orDefault(readTrim(c, "proc/sys/kernel/ostype"), "Linux"),
		"release", rel,
		"version", readTrim(c, "proc/sys/kernel/version"),
		"machine", readTrim(c, "proc/sys/kernel/arch"),
		"nodename", readTrim(c, "proc/sys/kernel/hostname"),
		"domainname", readTrim(c, "proc/sys/kernel/domainname"))
	c.add("memdoctor_page_size_bytes", float64(c.fs.PageSize))
	ver, banner, err := c.fs.GlibcVersion()
	if err != nil {
		c.note("libc.so.6", "glibc version unknown: "+err.Error(),
			"glibc-specific advice (arena limits, trim behaviour by version)", "")
		return nil
	}
	c.add("memdoctor_glibc_info", 1, "version", ver, "banner", banner)
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
