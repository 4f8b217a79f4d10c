package kube

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/muesli/cancelreader"
	"golang.org/x/term"
	"k8s.io/client-go/tools/remotecommand"
)

// Interactive runs a console session on a local terminal: when in and out
// are terminals it asks for a TTY, puts the terminal in raw mode for the
// session and forwards its size on every SIGWINCH; otherwise it streams
// stdin, stdout and stderr as they are (a pipe or a script).
func (e *Exec) Interactive(ctx context.Context, namespace, pod string, command []string, in io.Reader, out, errOut io.Writer) error {
	r := ExecRequest{Namespace: namespace, Pod: pod, Command: command, Stdin: in, Stdout: out, Stderr: errOut}
	inF, inOK := in.(*os.File)
	outF, outOK := out.(*os.File)
	if inOK && outOK && term.IsTerminal(int(inF.Fd())) && term.IsTerminal(int(outF.Fd())) {
		// Check before the terminal goes raw: errors print as usual.
		if _, err := CheckPod(ctx, e.Client, namespace, pod); err != nil {
			return err
		}
		state, err := term.MakeRaw(int(inF.Fd()))
		if err != nil {
			return err
		}
		defer func() { _ = term.Restore(int(inF.Fd()), state) }()
		sig := make(chan os.Signal, 1)
		if len(resizeSignals) > 0 {
			signal.Notify(sig, resizeSignals...)
			defer signal.Stop(sig)
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		fd := int(outF.Fd())
		r.TTY = true
		r.Sizes = WatchSize(sctx, func() (int, int, error) { return term.GetSize(fd) }, sig)
		// The stream copies stdin in a goroutine that would otherwise stay
		// blocked in a read after the session and eat the next key of
		// whoever reads the terminal then (the dashboard).
		if cr, err := cancelreader.NewReader(inF); err == nil {
			defer cr.Cancel()
			r.Stdin = cr
		}
	}
	return e.Run(ctx, r)
}

// SizeQueue delivers terminal sizes to an exec session
// (remotecommand.TerminalSizeQueue). Only the newest pending size is kept.
type SizeQueue struct {
	ch chan remotecommand.TerminalSize
}

// Next blocks for the next size; nil once the session's context ended.
func (q *SizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q.ch
	if !ok {
		return nil
	}
	return &s
}

// WatchSize sends the current size, then the size after every signal on
// resized, until ctx ends.
func WatchSize(ctx context.Context, size func() (w, h int, err error), resized <-chan os.Signal) *SizeQueue {
	q := &SizeQueue{ch: make(chan remotecommand.TerminalSize, 1)}
	push := func() {
		w, h, err := size()
		if err != nil || w <= 0 || h <= 0 {
			return
		}
		s := remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}
		for {
			select {
			case q.ch <- s:
				return
			default: // replace a size nobody read yet
				select {
				case <-q.ch:
				default:
				}
			}
		}
	}
	go func() {
		defer close(q.ch)
		push()
		for {
			select {
			case <-ctx.Done():
				return
			case <-resized:
				push()
			}
		}
	}()
	return q
}

// Console runs the default shell in the member's desktop container on the
// given terminal streams (the dashboard's console key; tui.ConsoleRunner).
func (e *Exec) Console(ctx context.Context, namespace, pod string, in io.Reader, out, errOut io.Writer) error {
	return e.Interactive(ctx, namespace, pod, nil, in, out, errOut)
}
