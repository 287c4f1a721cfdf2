package main

import (
	"fmt"
	"io"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/reflector"
)

// restoreCommand is `inofd restore BACKUP`: it installs a backup taken with
// `inofctl backup` as the store of a reflector that is not running.
func restoreCommand(environ []string, stdout, stderr io.Writer) *cobra.Command {
	var file string
	var force, acceptFuture bool
	cmd := &cobra.Command{
		Use:   "restore BACKUP",
		Short: "Install a store backup (inofctl backup) on a stopped reflector",
		Long: "Restores zoning, its history and the audit trail (and the lossless profile, from the\n" +
			"journal) into the state directory of the reflector the configuration describes. The\n" +
			"reflector must be stopped. Refused without --force when a store is already there (it is\n" +
			"then kept beside as zones.db.replaced-TIME) or when the backup is older than the\n" +
			"tombstone lifetime (7 days). Started afterwards, the reflector takes its peers' newer\n" +
			"versions and deletions: nothing deleted since the backup comes back.\n" +
			"The backup is verified completely before anything is replaced: its checksum (backups\n" +
			"from before checksums are taken without), the store file's consistency, and its newest\n" +
			"change not ahead of this host's clock (--accept-future-clock to take it anyway).\n" +
			"Exit codes: 0 restored, 1 refused or failed (nothing changed), 64 usage error,\n" +
			"78 invalid configuration.",
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := reflector.DefaultOptions()
			if err := daemon.Load(daemon.LoadOptions{File: file, Flags: cmd.Flags(), Environ: environ,
				FlagKeys: map[string]string{"state-dir": "state_dir", "router-id": "router_id"}}, &opts); err != nil {
				return daemon.ConfigError{Err: err}
			}
			who := "unknown"
			if u, err := user.Current(); err == nil {
				who = u.Username
			}
			rep, err := reflector.Restore(opts, reflector.RestoreOptions{Backup: args[0], Force: force,
				AcceptFutureClock: acceptFuture, Identity: "user:" + who, Via: "inofd restore"})
			if err != nil {
				return daemon.RuntimeError(err)
			}
			if !rep.Checksummed {
				fmt.Fprintf(stderr, "inofd: %s carries no checksum (taken before backups had one): checked by its structure only\n", args[0])
			}
			fmt.Fprintf(stdout, "restored %s into %s: %d zones, %d aliases (%d records), %d journal entries, newest change %s\n",
				args[0], opts.StorePath(), rep.Zones, rep.Aliases, rep.Records, rep.Entries, rep.TakenAt.UTC().Format("2006-01-02T15:04:05Z"))
			if rep.Profile {
				fmt.Fprintln(stdout, "lossless profile restored from the journal")
			}
			if rep.Replaced != "" {
				fmt.Fprintf(stdout, "the store that was there is kept as %s\n", rep.Replaced)
			}
			fmt.Fprintln(stdout, "start the reflector: it takes its peers' newer changes and deletions as it rejoins")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "the reflector's YAML configuration file")
	f.String("state-dir", "", "directory of the reflector's state (overrides the file)")
	f.String("router-id", "", "the reflector's router-id (overrides the file)")
	f.BoolVar(&force, "force", false, "replace an existing store, take a backup older than the tombstone lifetime")
	f.BoolVar(&acceptFuture, "accept-future-clock", false, "take a backup whose newest change is ahead of this host's clock")
	return cmd
}
