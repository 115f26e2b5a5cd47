package eventlog_test

import "os"

func tempDir() (string, func()) {
	dir, err := os.MkdirTemp("", "eventlog-example")
	if err != nil {
		panic(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}
