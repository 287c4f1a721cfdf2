package api

import (
	"context"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/openinof/inof/inof"
)

// Text in answers comes partly from devices (NQNs, and the events and
// explanations that quote them). gRPC refuses to marshal a string field
// that is not UTF-8 ("string field contains invalid UTF-8"), which failed
// every call and ended every event stream that met one such field. The
// edges refuse such text (inof.ValidateWireNQN); as defence in depth every
// answer is also walked before it is sent and each invalid string field
// made valid (inof.ValidUTF8). Valid answers are not changed nor copied.

// sanitiseInterceptors return the server options that make every answer
// and streamed message valid UTF-8.
func sanitiseInterceptors() []grpc.ServerOption {
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if m, ok := resp.(proto.Message); ok && err == nil {
			validUTF8(m.ProtoReflect())
		}
		return resp, err
	}
	stream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, validStream{ss})
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

// validStream makes every message it sends valid UTF-8.
type validStream struct{ grpc.ServerStream }

func (s validStream) SendMsg(m any) error {
	if pm, ok := m.(proto.Message); ok {
		validUTF8(pm.ProtoReflect())
	}
	return s.ServerStream.SendMsg(m)
}

// validUTF8 replaces, in m and every message it holds, each string field,
// list element and map key or value that is not UTF-8 by inof.ValidUTF8 of
// it. A list or map that needs a change is replaced by a changed copy,
// never changed in place: answers may share them with the server's state
// (the event feed's attribute maps).
func validUTF8(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		isMsg := fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.StringKind:
			validList(m, fd, v.List())
		case fd.IsList() && isMsg:
			for i := range v.List().Len() {
				validUTF8(v.List().Get(i).Message())
			}
		case fd.IsMap():
			validMap(m, fd, v.Map())
		case fd.Kind() == protoreflect.StringKind:
			if s := v.String(); !utf8.ValidString(s) {
				m.Set(fd, protoreflect.ValueOfString(inof.ValidUTF8(s)))
			}
		case isMsg:
			validUTF8(v.Message())
		}
		return true
	})
}

func validList(m protoreflect.Message, fd protoreflect.FieldDescriptor, l protoreflect.List) {
	ok := true
	for i := range l.Len() {
		ok = ok && utf8.ValidString(l.Get(i).String())
	}
	if ok {
		return
	}
	nl := m.NewField(fd).List()
	for i := range l.Len() {
		nl.Append(protoreflect.ValueOfString(inof.ValidUTF8(l.Get(i).String())))
	}
	m.Set(fd, protoreflect.ValueOfList(nl))
}

func validMap(m protoreflect.Message, fd protoreflect.FieldDescriptor, mp protoreflect.Map) {
	strKey := fd.MapKey().Kind() == protoreflect.StringKind
	strVal := fd.MapValue().Kind() == protoreflect.StringKind
	if fk := fd.MapValue().Kind(); fk == protoreflect.MessageKind || fk == protoreflect.GroupKind {
		mp.Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
			validUTF8(v.Message())
			return true
		})
	}
	ok := true
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		ok = !(strKey && !utf8.ValidString(k.String())) && !(strVal && !utf8.ValidString(v.String()))
		return ok
	})
	if ok {
		return
	}
	nm := m.NewField(fd).Map()
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		if strKey {
			k = protoreflect.ValueOfString(inof.ValidUTF8(k.String())).MapKey()
		}
		if strVal {
			v = protoreflect.ValueOfString(inof.ValidUTF8(v.String()))
		}
		nm.Set(k, v)
		return true
	})
	m.Set(fd, protoreflect.ValueOfMap(nm))
}
