// Package ctlproto is a harness library, internal to integration/vm: the
// wire format both the test process and the guest's init speak
// (docs/testing.md, "Where things live").
package ctlproto
