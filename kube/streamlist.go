// The informers' first lists of Pods and PVCs, decoded one object at a time.

package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// streamedLists is a client whose lists of Pods and PVCs are read from the
// response as it arrives, one object at a time, each stripped for the
// cache (StripForCache) once decoded. client-go's List reads the whole
// response into memory, then decodes every object whole into one list that
// the informer transforms only once it is complete: for a namespace of
// 10,000 members about 20 MB of protobuf and 160 MB of decoded Pods at
// once, which the process keeps as resident memory long after (the Go
// runtime returns freed memory slowly), and whose decoding starts only
// when the last byte has arrived. Here an object's full form is garbage as
// soon as the next one is decoded, and decoding runs while the API server
// still sends.
//
// It takes the protobuf answer only (the API server's for Pods and PVCs
// when asked for it); any other answer (JSON, an error, a client without a
// REST client, such as a fake one) is left to client-go's List, asked again.
// Everything else is the wrapped client's.
type streamedLists struct{ kubernetes.Interface }

func (c streamedLists) CoreV1() corev1client.CoreV1Interface {
	core := c.Interface.CoreV1()
	rc, ok := core.RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return core
	}
	return streamedCore{CoreV1Interface: core, rc: rc}
}

type streamedCore struct {
	corev1client.CoreV1Interface
	rc *rest.RESTClient
}

func (c streamedCore) Pods(namespace string) corev1client.PodInterface {
	return streamedPods{PodInterface: c.CoreV1Interface.Pods(namespace), rc: c.rc, namespace: namespace}
}

func (c streamedCore) PersistentVolumeClaims(namespace string) corev1client.PersistentVolumeClaimInterface {
	return streamedPVCs{PersistentVolumeClaimInterface: c.CoreV1Interface.PersistentVolumeClaims(namespace), rc: c.rc, namespace: namespace}
}

type streamedPods struct {
	corev1client.PodInterface
	rc        *rest.RESTClient
	namespace string
}

func (p streamedPods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	handled, err := streamItems(ctx, p.rc, p.namespace, "pods", opts, &out.ListMeta, &out.Items)
	if !handled {
		return p.PodInterface.List(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

type streamedPVCs struct {
	corev1client.PersistentVolumeClaimInterface
	rc        *rest.RESTClient
	namespace string
}

func (p streamedPVCs) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PersistentVolumeClaimList, error) {
	out := &corev1.PersistentVolumeClaimList{}
	handled, err := streamItems(ctx, p.rc, p.namespace, "persistentvolumeclaims", opts, &out.ListMeta, &out.Items)
	if !handled {
		return p.PersistentVolumeClaimInterface.List(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// streamItems is streamList into items, each object decoded then stripped
// for the cache (StripForCache).
func streamItems[T any, PT interface {
	*T
	Unmarshal([]byte) error
}](ctx context.Context, rc *rest.RESTClient, namespace, resource string, opts metav1.ListOptions, meta *metav1.ListMeta, items *[]T) (bool, error) {
	return streamList(ctx, rc, namespace, resource, opts, meta, func(b []byte) error {
		var zero T
		*items = append(*items, zero)
		o := PT(&(*items)[len(*items)-1])
		if err := o.Unmarshal(b); err != nil {
			return err
		}
		_, err := StripForCache(any(o))
		return err
	})
}

const protobufType = "application/vnd.kubernetes.protobuf"

// streamList lists resource in namespace ("" for all) with opts, asking for
// protobuf, and hands the list's metadata to meta and each item's bytes to
// item. handled is false when the answer is not a protobuf list (nothing
// was decoded; the caller lists again its own way).
func streamList(ctx context.Context, rc *rest.RESTClient, namespace, resource string, opts metav1.ListOptions,
	meta *metav1.ListMeta, item func([]byte) error) (handled bool, err error) {
	u := rc.Get().Namespace(namespace).Resource(resource).VersionedParams(&opts, scheme.ParameterCodec).URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, nil
	}
	req.Header.Set("Accept", protobufType)
	if rl := rc.GetRateLimiter(); rl != nil {
		if err := rl.Wait(ctx); err != nil {
			return true, err
		}
	}
	resp, err := rc.Client.Do(req)
	if err != nil {
		return false, nil // client-go's List tells it
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != protobufType {
		return false, nil
	}
	return true, decodeList(bufio.NewReaderSize(resp.Body, 64<<10), meta, item)
}

// protobufMagic starts every protobuf object the API server sends
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// maxListItem bounds one object's size in a list (the API server's
// requests are at most 3 MiB; etcd's values about as large).
const maxListItem = 64 << 20

// decodeList reads a protobuf list: the magic, then a runtime.Unknown
// whose field 2 (raw) is the list, whose field 1 is its ListMeta and each
// field 2 an item. The Unknown's fields after raw (its encoding and
// content type, empty from the API server) are not read.
func decodeList(r *bufio.Reader, meta *metav1.ListMeta, item func([]byte) error) error {
	magic := make([]byte, len(protobufMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if !bytes.Equal(magic, protobufMagic) {
		return errors.New("list: not a protobuf object")
	}
	pr := &protoReader{r: r}
	for {
		field, wire, err := pr.tag()
		if err == io.EOF {
			return errors.New("list: no object in the answer")
		}
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if field == 2 && wire == wireBytes { // Unknown.raw
			n, err := pr.varint()
			if err != nil {
				return fmt.Errorf("list: %w", err)
			}
			return decodeListBody(&protoReader{r: r, left: int64(n), limited: true}, meta, item)
		}
		if err := pr.skip(wire); err != nil {
			return fmt.Errorf("list: %w", err)
		}
	}
}

func decodeListBody(pr *protoReader, meta *metav1.ListMeta, item func([]byte) error) error {
	var buf []byte
	for pr.left > 0 {
		field, wire, err := pr.tag()
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if wire != wireBytes || (field != 1 && field != 2) {
			if err := pr.skip(wire); err != nil {
				return fmt.Errorf("list: %w", err)
			}
			continue
		}
		if buf, err = pr.bytes(buf); err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if field == 1 {
			err = meta.Unmarshal(buf)
		} else {
			err = item(buf)
		}
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
	}
	return nil
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// protoReader reads protobuf fields from a stream; limited, it reads no
// more than left bytes.
type protoReader struct {
	r       *bufio.Reader
	left    int64
	limited bool
}

func (p *protoReader) readByte() (byte, error) {
	if p.limited && p.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	b, err := p.r.ReadByte()
	if err == nil {
		p.left--
	}
	return b, err
}

func (p *protoReader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := p.readByte()
		if err != nil {
			if err == io.EOF && shift > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint overflows")
}

func (p *protoReader) tag() (field uint64, wire int, err error) {
	t, err := p.varint()
	if err != nil {
		return 0, 0, err
	}
	return t >> 3, int(t & 7), nil
}

// bytes reads a length-delimited field's bytes into buf (grown as needed).
func (p *protoReader) bytes(buf []byte) ([]byte, error) {
	n, err := p.varint()
	if err != nil {
		return buf, err
	}
	if n > maxListItem || (p.limited && int64(n) > p.left) {
		return buf, fmt.Errorf("a field of %d bytes", n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n, max(n, 2*uint64(cap(buf))))
	}
	buf = buf[:n]
	if _, err := io.ReadFull(p.r, buf); err != nil {
		return buf, noEOF(err)
	}
	p.left -= int64(n)
	return buf, nil
}

func (p *protoReader) skip(wire int) error {
	var n int64
	switch wire {
	case wireVarint:
		_, err := p.varint()
		return noEOF(err)
	case wireFixed64:
		n = 8
	case wireFixed32:
		n = 4
	case wireBytes:
		l, err := p.varint()
		if err != nil {
			return noEOF(err)
		}
		n = int64(l)
	default:
		return fmt.Errorf("wire type %d", wire)
	}
	if p.limited && n > p.left {
		return io.ErrUnexpectedEOF
	}
	if _, err := p.r.Discard(int(n)); err != nil {
		return noEOF(err)
	}
	p.left -= n
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
