package cli

import (
	"fmt"
	"strings"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// describe writes an edit as the command that makes it.
func describe(e *inofv1.Edit) string {
	list := func(ms []string) string { return strings.Join(ms, " ") }
	switch x := e.GetEdit().(type) {
	case *inofv1.Edit_CreateZone:
		return strings.TrimSpace("zone create " + x.CreateZone.GetName() + " " + list(x.CreateZone.GetMembers()))
	case *inofv1.Edit_DeleteZone:
		return "zone delete " + x.DeleteZone.GetName()
	case *inofv1.Edit_RenameZone:
		return "zone rename " + x.RenameZone.GetName() + " " + x.RenameZone.GetNewName()
	case *inofv1.Edit_AddZoneMembers:
		return "zone add " + x.AddZoneMembers.GetZone() + " " + list(x.AddZoneMembers.GetMembers())
	case *inofv1.Edit_RemoveZoneMembers:
		return "zone remove " + x.RemoveZoneMembers.GetZone() + " " + list(x.RemoveZoneMembers.GetMembers())
	case *inofv1.Edit_CreateAlias:
		return strings.TrimSpace("alias create " + x.CreateAlias.GetName() + " " + list(x.CreateAlias.GetMembers()))
	case *inofv1.Edit_DeleteAlias:
		return "alias delete " + x.DeleteAlias.GetName()
	case *inofv1.Edit_AddAliasMembers:
		return "alias add " + x.AddAliasMembers.GetAlias() + " " + list(x.AddAliasMembers.GetMembers())
	case *inofv1.Edit_RemoveAliasMembers:
		return "alias remove " + x.RemoveAliasMembers.GetAlias() + " " + list(x.RemoveAliasMembers.GetMembers())
	case *inofv1.Edit_SetSettings:
		var parts []string
		if x.SetSettings.DefaultZoneEnabled != nil {
			parts = append(parts, "fabric set default-zone "+onOff(x.SetSettings.GetDefaultZoneEnabled()))
		}
		if x.SetSettings.HardZoning != nil {
			parts = append(parts, "fabric set hard-zoning "+onOff(x.SetSettings.GetHardZoning()))
		}
		return strings.Join(parts, "; ")
	case *inofv1.Edit_SetPin:
		return "pin set " + x.SetPin.GetNqn() + " --at " + strings.Join(x.SetPin.GetAt(), " --at ")
	case *inofv1.Edit_RemovePin:
		return "pin remove " + x.RemovePin.GetNqn()
	}
	return fmt.Sprintf("unknown edit %v", e)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// parseOnOff reads on/off (or true/false, enable/disable).
func parseOnOff(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "on", "true", "enable", "enabled", "yes":
		return true, nil
	case "off", "false", "disable", "disabled", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q: want on or off", s)
}
