package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/internal/buildinfo"
)

// versionCmds is inofctl version.
type versionCmds struct{ *app }

// versionCommand is `inofctl version`: this client's build and, unless
// --client, the build and role of the inofd serving the API.
func (a versionCmds) versionCommand() *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the versions of inofctl and of the inofd it talks to",
		Long: "version prints inofctl's build (module version, VCS revision, Go version) and asks\n" +
			"the API for the serving inofd's build and role. --client skips the server.",
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "only this client's version; contact no server")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		in := buildinfo.Read()
		client := &inofv1.VersionResponse{Program: "inofctl", Version: in.Version, Revision: in.Revision,
			Modified: in.Modified, VcsTime: in.Time, GoVersion: in.GoVersion}
		if clientOnly {
			return a.printVersions(client, nil)
		}
		return a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			server, err := c.Version(ctx, &inofv1.VersionRequest{})
			if err != nil {
				// The client's part is still worth showing.
				if perr := a.printVersions(client, nil); perr != nil {
					return perr
				}
				return fmt.Errorf("server version: %w", err)
			}
			return a.printVersions(client, server)
		})(cmd, args)
	}
	return cmd
}

// printVersions prints the client's and, if known, the server's builds.
func (a versionCmds) printVersions(client, server *inofv1.VersionResponse) error {
	out := map[string]any{}
	var err error
	if out["client"], err = plain(client); err != nil {
		return err
	}
	if server != nil {
		if out["server"], err = plain(server); err != nil {
			return err
		}
	}
	return a.print("Version", out, func(w io.Writer) {
		fmt.Fprintf(w, "client: %s\n", versionLine(client))
		if server != nil {
			fmt.Fprintf(w, "server: %s, role %s, started %s\n", versionLine(server), server.GetRole(), since(server.GetStarted()))
		}
	})
}

// versionLine is the --version line of a build, without the newline.
func versionLine(v *inofv1.VersionResponse) string {
	in := buildinfo.Info{Version: v.GetVersion(), Revision: v.GetRevision(), Modified: v.GetModified(),
		Time: v.GetVcsTime(), GoVersion: v.GetGoVersion()}
	return v.GetProgram() + " " + in.String()
}
