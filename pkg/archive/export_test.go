package archive

// SetMax sets the bound of one object the store reads, for tests.
func (d *Dir) SetMax(n int64) { d.max = n }

// SetMax sets the bound of one object the store reads, for tests.
func (s *S3) SetMax(n int64) { s.max = n }
