package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Main runs the onair command line and exits the process.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// builtin commands of the kernel; modules add theirs through Commander.
func builtinCommands() []Command {
	return []Command{
		{Name: "serve", Usage: "serve the API, pages and media (the default)", Flags: func(fs *flag.FlagSet) func(context.Context, *Core, io.Writer) error {
			return serve
		}},
		{Name: "migrate", Usage: "apply pending database migrations and exit", Flags: func(fs *flag.FlagSet) func(context.Context, *Core, io.Writer) error {
			return func(ctx context.Context, core *Core, stdout io.Writer) error {
				n, err := core.Migrate(ctx)
				if err != nil {
					return err
				}
				// Boot applied the kernel's own steps already.
				fmt.Fprintf(stdout, "%d migrations applied\n", core.kernelMigrated+n)
				return nil
			}
		}},
	}
}

// Run executes one command line and returns the exit status. It is Main
// without the process around it, so tests can call it.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintf(stdout, "onair %s\n", Version)
		return 0
	}
	if len(args) > 0 && (args[0] == "help" || isHelpFlag(args[0])) {
		if args[0] == "help" && len(args) > 1 {
			// "onair help users create" is "onair users create -h".
			return Run(ctx, append(args[1:len(args):len(args)], "-h"), stdout, stderr, getenv)
		}
		usage(stdout)
		return 0
	}
	cmd, rest, err := findCommand(args)
	if err != nil {
		// A first word of commands ("users"), alone or with -h, lists them.
		if group := commandsUnder(args[0]); len(group) > 0 && (len(args) == 1 || isHelpFlag(args[1])) {
			w, code := stderr, 2
			if len(args) > 1 {
				w, code = stdout, 0
			}
			groupUsage(w, args[0], group)
			return code
		}
		fmt.Fprintf(stderr, "onair: %v\n\n", err)
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet("onair "+cmd.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Run says what went wrong, naming the command
	run := cmd.Flags(fs)
	own := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { own[f.Name] = true })
	cfg, err := LoadConfig(fs, rest, getenv)
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(stdout, cmd, fs, own)
		return 0
	}
	var flagErr *FlagError
	if errors.As(err, &flagErr) {
		fmt.Fprintf(stderr, "onair %s: %v\nrun 'onair %s -h' for its flags\n", cmd.Name, flagErr.Err, cmd.Name)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "onair: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "onair %s: unexpected argument %q\nrun 'onair %s -h' for its flags\n", cmd.Name, fs.Arg(0), cmd.Name)
		return 2
	}
	core, err := Boot(ctx, cfg, BootOptions{SkipMigrations: cmd.Name == "migrate", Log: NewLogger(stderr, cfg), Stderr: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "onair: %v\n", err)
		return 1
	}
	defer core.Close()
	if err := run(ctx, core, stdout); err != nil {
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Fields != nil {
			for f, problem := range apiErr.Fields {
				fmt.Fprintf(stderr, "onair %s: --%s %s\n", cmd.Name, f, problem)
			}
			return 1
		}
		fmt.Fprintf(stderr, "onair %s: %v\n", cmd.Name, err)
		return 1
	}
	return 0
}

// allCommands is the kernel's commands followed by every module's.
func allCommands() []Command {
	cmds := builtinCommands()
	for _, m := range Modules() {
		if c, ok := m.(Commander); ok {
			cmds = append(cmds, c.Commands()...)
		}
	}
	return cmds
}

// findCommand matches the longest command name (one or two words) at the
// start of args; no args, or a flag first, means serve.
func findCommand(args []string) (Command, []string, error) {
	cmds := allCommands()
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return cmds[0], args, nil
	}
	for _, c := range cmds {
		words := strings.Fields(c.Name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.Name && len(words) == 2 {
			return c, args[2:], nil
		}
	}
	for _, c := range cmds {
		if c.Name == args[0] {
			return c, args[1:], nil
		}
	}
	return Command{}, nil, fmt.Errorf("unknown command %q", strings.Join(args[:min(2, len(args))], " "))
}

func isHelpFlag(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

// commandsUnder are the two-word commands whose first word is word.
func commandsUnder(word string) []Command {
	var out []Command
	for _, c := range allCommands() {
		if first, _, two := strings.Cut(c.Name, " "); two && first == word {
			out = append(out, c)
		}
	}
	return out
}

func groupUsage(w io.Writer, word string, group []Command) {
	fmt.Fprintf(w, "usage: onair %s <command> [flags]\n\ncommands:\n", word)
	for _, c := range group {
		fmt.Fprintf(w, "  %-16s %s\n", c.Name, c.Usage)
	}
	fmt.Fprintf(w, "\n'onair %s -h' lists a command's flags.\n", group[0].Name)
}

// commandUsage is one command's help: what it does and its own flags. The
// settings every command accepts as flags too are only named, since they
// would bury the command's own (onair help lists them).
func commandUsage(w io.Writer, cmd Command, fs *flag.FlagSet, own map[string]bool) {
	fmt.Fprintf(w, "usage: onair %s [flags]\n  %s\n\n", cmd.Name, cmd.Usage)
	mine := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if own[f.Name] {
			mine.Var(f.Value, f.Name, f.Usage)
			mine.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	if len(own) == 0 {
		fmt.Fprintf(w, "flags: none of its own.\n")
	} else {
		fmt.Fprintf(w, "flags:\n")
		mine.SetOutput(w)
		mine.PrintDefaults()
	}
	fmt.Fprintf(w, "\nIt also takes every setting as a flag (-database-url, -data-dir, ...) or its\nONAIR_* variable; 'onair help' lists them.\n")
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "onair %s: live shows, chat and users behind the v1 REST API\n\nusage: onair [command] [flags]\n\ncommands:\n", Version)
	cmds := allCommands()
	sort.SliceStable(cmds[1:], func(i, j int) bool { return cmds[1+i].Name < cmds[1+j].Name })
	fmt.Fprintf(w, "  %-16s %s\n", "version", "print the version")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-16s %s\n", c.Name, c.Usage)
	}
	fmt.Fprintf(w, "\nsettings (environment variable, flag, default); every command accepts them:\n%s", SettingsHelp())
}

// serve runs the HTTP server (and the modules' services) until a signal.
func serve(ctx context.Context, core *Core, _ io.Writer) error {
	// Every connection, file and database handle is a descriptor: take all
	// the system allows before the connection cap is derived from it.
	soft, hard, err := raiseDescriptorLimit()
	if err != nil {
		core.Log.Warn("descriptor limit: could not raise the soft limit to the hard one", "soft", soft, "hard", hard, "err", err)
	} else {
		core.Log.Info("descriptor limit", "soft", soft, "hard", hard)
	}
	srv, err := NewServer(core)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", core.Config.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on ONAIR_HTTP_ADDR %s: %w", core.Config.HTTPAddr, err)
	}
	return srv.Serve(ctx, ln)
}

// RedactURL hides the password of a URL with credentials (database,
// Redis, object store) for logs and error messages.
func RedactURL(raw string) string {
	if at := strings.LastIndex(raw, "@"); at > 0 {
		if scheme := strings.Index(raw, "://"); scheme > 0 {
			creds := raw[scheme+3 : at]
			if user, _, ok := strings.Cut(creds, ":"); ok {
				return raw[:scheme+3] + user + ":***" + raw[at:]
			}
		}
	}
	return raw
}
