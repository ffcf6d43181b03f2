// Command ferretdb runs FerretDB 1.24 with its SQLite backend for the
// service's embedded database. It wraps FerretDB's embeddable package because
// `go install .../cmd/ferretdb` cannot run from a module proxy build (its
// version file is generated from git at release time). src/db/ferretdb-build.ts
// builds it against a copy of the module with one fix (README, "Database notes").
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listenAddr := flag.String("listen-addr", "127.0.0.1:27017", "TCP address to listen on")
	handler := flag.String("handler", "sqlite", "backend handler; only sqlite is supported here")
	sqliteURL := flag.String("sqlite-url", "file:data/", "SQLite URI (a directory)")
	telemetry := flag.String("telemetry", "disable", "telemetry; the embeddable package never reports, so only disable is accepted")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
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

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := f.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}
