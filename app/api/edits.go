package api

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/zones"
)

// applyEdits stages edits on tx in order; the first failing edit stops it
// with an error naming the edit.
func applyEdits(tx *zones.Tx, edits []*inofv1.Edit) error {
	for i, e := range edits {
		if err := applyEdit(tx, e); err != nil {
			return fmt.Errorf("edit %d: %w", i+1, err)
		}
	}
	return nil
}

func applyEdit(tx *zones.Tx, e *inofv1.Edit) error {
	switch e := e.GetEdit().(type) {
	case *inofv1.Edit_CreateZone:
		ms, err := parseMembers(e.CreateZone.GetMembers())
		if err != nil {
			return err
		}
		return tx.CreateZone(e.CreateZone.GetName(), ms...)
	case *inofv1.Edit_DeleteZone:
		return tx.DeleteZone(e.DeleteZone.GetName())
	case *inofv1.Edit_RenameZone:
		return renameZone(tx, e.RenameZone.GetName(), e.RenameZone.GetNewName())
	case *inofv1.Edit_AddZoneMembers:
		ms, err := parseMembers(e.AddZoneMembers.GetMembers())
		if err != nil {
			return err
		}
		return tx.AddZoneMembers(e.AddZoneMembers.GetZone(), ms...)
	case *inofv1.Edit_RemoveZoneMembers:
		ms, err := parseMembers(e.RemoveZoneMembers.GetMembers())
		if err != nil {
			return err
		}
		return tx.RemoveZoneMembers(e.RemoveZoneMembers.GetZone(), ms...)
	case *inofv1.Edit_CreateAlias:
		ms, err := parseMembers(e.CreateAlias.GetMembers())
		if err != nil {
			return err
		}
		return tx.CreateAlias(e.CreateAlias.GetName(), ms...)
	case *inofv1.Edit_DeleteAlias:
		return tx.DeleteAlias(e.DeleteAlias.GetName())
	case *inofv1.Edit_AddAliasMembers:
		ms, err := parseMembers(e.AddAliasMembers.GetMembers())
		if err != nil {
			return err
		}
		return tx.AddAliasMembers(e.AddAliasMembers.GetAlias(), ms...)
	case *inofv1.Edit_RemoveAliasMembers:
		ms, err := parseMembers(e.RemoveAliasMembers.GetMembers())
		if err != nil {
			return err
		}
		return tx.RemoveAliasMembers(e.RemoveAliasMembers.GetAlias(), ms...)
	case *inofv1.Edit_SetSettings:
		st := tx.Config().Settings
		if e.SetSettings.DefaultZoneEnabled != nil {
			st.DefaultZoneEnabled = e.SetSettings.GetDefaultZoneEnabled()
		}
		if e.SetSettings.HardZoning != nil {
			st.HardZoning = e.SetSettings.GetHardZoning()
		}
		return tx.SetSettings(st)
	case *inofv1.Edit_SetPin:
		at, err := parseLocations(e.SetPin.GetAt())
		if err != nil {
			return err
		}
		return tx.SetPin(e.SetPin.GetNqn(), at...)
	case *inofv1.Edit_RemovePin:
		return tx.RemovePin(e.RemovePin.GetNqn())
	}
	return status.Error(codes.InvalidArgument, "empty or unknown edit")
}

// renameZone replaces a zone by one with the new name and the same members
// (replicated as a tombstone for the old name and a new zone).
func renameZone(tx *zones.Tx, name, newName string) error {
	if name == newName {
		return fmt.Errorf("zone %q: %w: rename to the same name", name, zones.ErrName)
	}
	z := tx.Config().Zones[name]
	if z == nil {
		return fmt.Errorf("zone %q: %w", name, zones.ErrNotFound)
	}
	members := append([]zones.Member(nil), z.Members...)
	if err := zones.ValidateName(newName); err != nil {
		return err
	}
	if err := tx.DeleteZone(name); err != nil {
		return err
	}
	return tx.CreateZone(newName, members...)
}

func parseMembers(in []string) ([]zones.Member, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]zones.Member, 0, len(in))
	var errs []error
	for _, s := range in {
		m, err := zones.ParseMember(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

func parseLocations(in []string) ([]zones.Location, error) {
	out := make([]zones.Location, 0, len(in))
	var errs []error
	for _, s := range in {
		l, err := zones.ParseLocation(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}
