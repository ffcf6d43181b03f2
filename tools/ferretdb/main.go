// Command ferretdb runs FerretDB 1.24 with its SQLite backend for the
// service's embedded database. It wraps FerretDB's embeddable package because
// `go install .../cmd/ferretdb` cannot run from a module proxy build (its
// version file is generated from git at release time). src/db/ferretdb-build.ts
// builds it against a copy of the module with one fix (README, "Database notes").
//
// Two processes must never run FerretDB on the same SQLite files (it does not
// isolate concurrent updates between processes), so it first takes an
// exclusive lock that the kernel releases when the process dies, however it
// dies. It exits when its parent closes stdin, so it never outlives the service.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listenAddr := flag.String("listen-addr", "127.0.0.1:27017", "TCP address to listen on")
	handler := flag.String("handler", "sqlite", "backend handler; only sqlite is supported here")
	sqliteURL := flag.String("sqlite-url", "file:data/", "SQLite URI (a directory)")
	telemetry := flag.String("telemetry", "disable", "telemetry; the embeddable package never reports, so only disable is accepted")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	lockFile := flag.String("lock-file", "", "file to lock exclusively for the life of the process (empty: no lock)")
	parentPipe := flag.Bool("exit-with-stdin", false, "exit when stdin reaches end of file (the parent died or let go)")
	flag.Parse()

	if *handler != "sqlite" || *telemetry != "disable" {
		fmt.Fprintln(os.Stderr, "ferretdb: only --handler=sqlite and --telemetry=disable are supported")
		os.Exit(2)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listenAddr},
		Handler:   *handler,
		SQLiteURL: *sqliteURL,
		Logger:    logger,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}

	if *lockFile != "" {
		if err := lockExclusively(*lockFile); err != nil {
			fmt.Fprintln(os.Stderr, "ferretdb:", err)
			os.Exit(exitLocked)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *parentPipe {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	if err := f.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

// exitLocked is the exit code when another process holds the lock (src/db/ferretdb.ts reads it).
const exitLocked = 75

// lockExclusively takes a non-blocking flock on path and keeps the file open
// for the life of the process; it writes the process id into the file so a
// refused start can name the owner.
func lockExclusively(path string) error {
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner, _ := io.ReadAll(file)
			return fmt.Errorf("%s is locked by process %s", path, strings.TrimSpace(string(owner)))
		}
		return err
	}
	if err := file.Truncate(0); err != nil {
		return err
	}
	if _, err := file.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	heldLock = file
	return nil
}

// heldLock keeps the locked file open and reachable: closing it, or letting the
// garbage collector finalise it, would release the lock.
var heldLock *os.File
