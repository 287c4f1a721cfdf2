package main

import (
	"fmt"
	"io"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/openinof/inof/inof/daemon"
	"github.com/openinof/inof/inof/reflector"
)

// restoreCommand is `inofd restore BACKUP`: it installs a backup taken with
// `inofctl backup` as the store of a reflector that is not running.
func restoreCommand(environ []string, stdout, stderr io.Writer) *cobra.Command {
	var file string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore BACKUP",
		Short: "Install a store backup (inofctl backup) on a stopped reflector",
		Long: "Restores zoning, its history and the audit trail (and the lossless profile, from the\n" +
			"journal) into the state directory of the reflector the configuration describes. The\n" +
			"reflector must be stopped. Refused without --force when a store is already there (it is\n" +
			"then kept beside as zones.db.replaced-TIME) or when the backup is older than the\n" +
			"tombstone lifetime (7 days). Started afterwards, the reflector takes its peers' newer\n" +
			"versions and deletions: nothing deleted since the backup comes back.",
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := reflector.DefaultOptions()
			if err := daemon.Load(daemon.LoadOptions{File: file, Flags: cmd.Flags(), Environ: environ,
				FlagKeys: map[string]string{"state-dir": "state_dir", "router-id": "router_id"}}, &opts); err != nil {
				fmt.Fprintf(stderr, "inofd: invalid configuration:\n%v\n", err)
				return err
			}
			who := "unknown"
			if u, err := user.Current(); err == nil {
				who = u.Username
			}
			rep, err := reflector.Restore(opts, reflector.RestoreOptions{Backup: args[0], Force: force,
				Identity: "user:" + who, Via: "inofd restore"})
			if err != nil {
				fmt.Fprintf(stderr, "inofd: %v\n", err)
				return err
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
	return cmd
}
