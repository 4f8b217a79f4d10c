package kubetest

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that writer goroutines (a logger, a child
// process's output, an executor's copy loops) and the test reading it may
// share.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines counts the lines written so far.
func (s *SyncBuffer) Lines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Count(s.b.Bytes(), []byte("\n"))
}

// Reset forgets what was written.
func (s *SyncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
