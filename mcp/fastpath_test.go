package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var decodeRequestSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task_get","arguments":{"task_id":"T-0001"}}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x"}}`,
	`{ "method" : "ping" , "id" : -7 , "jsonrpc" : "2.0" }`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
	`{"jsonrpc":"2.0","id":123456789012345,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1234567890123456789,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"m"}`,
	`{"jsonrpc":"2.0","id":null,"method":"m"}`,
	`{"jsonrpc":"2.0","id":true,"method":"m"}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"m"}`,
	`{"jsonrpc":"2.0","id":"é","method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"t\u006fols/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
	`{"jsonrpc":"2.0","ID":1,"method":"m"}`,
	`{"JSONRPC":"2.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","extra":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"}{][\"\\","b":[{},{"c":null}]}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\xff\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\u2028<>&\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\t1\r\n}}",
	`{}`,
}

// TestDecodeRequestAgreesWithSDK: every line decodeRequest accepts decodes to
// exactly what jsonrpc.DecodeMessage makes of it.
func TestDecodeRequestAgreesWithSDK(t *testing.T) {
	accepted := 0
	for _, s := range decodeRequestSeeds {
		if checkDecodeRequest(t, []byte(s)) {
			accepted++
		}
	}
	if accepted < 6 {
		t.Errorf("fast path took only %d of the seeds", accepted)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range decodeRequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeRequest(data) // never panics, whatever it is given
		data = bytes.TrimSpace(data)
		if !json.Valid(data) || len(data) == 0 || data[0] != '{' || nestedDeeper(data, maxNesting) {
			return // conn.decode answers these itself
		}
		checkDecodeRequest(t, data)
	})
}

// checkDecodeRequest reports whether the fast path took data, failing the
// test if it decoded it differently from the SDK.
func checkDecodeRequest(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := decodeRequest(data)
	if !ok {
		return false
	}
	want, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		t.Fatalf("%s: fast path accepted what DecodeMessage refuses: %v", data, err)
	}
	wreq, isReq := want.(*jsonrpc.Request)
	if !isReq {
		t.Fatalf("%s: fast path made a request of a %T", data, want)
	}
	if got.Method != wreq.Method || !reflect.DeepEqual(got.ID, wreq.ID) ||
		!bytes.Equal(got.Params, wreq.Params) || (got.Params == nil) != (wreq.Params == nil) || got.Extra != nil {
		t.Fatalf("%s:\n fast %+v params %q\n sdk  %+v params %q", data, got, got.Params, wreq, wreq.Params)
	}
	return true
}

var encodeResultSeeds = []string{
	`{"content":[{"type":"text","text":"{\"ok\":true,\"data\":{}}"}],"structuredContent":{"ok":true,"data":{}}}`,
	`{"a":"<>&\u2028 é \" \\ \n"}`,
	"{\"a\":\"<>&\u2028\u2029\"}",
	`{"a": 1}`,
	"{\"a\":\n1}",
	`{"a":"x y"}`,
	`[1,2,3]`,
	`"s"`,
	`{}`,
	`1.50e3`,
}

// TestEncodeResultAgreesWithSDK: every response encodeResult writes is the
// line jsonrpc.EncodeMessage makes of it.
func TestEncodeResultAgreesWithSDK(t *testing.T) {
	accepted := 0
	for _, s := range encodeResultSeeds {
		for _, id := range []any{float64(0), float64(7), float64(-3), float64(1 << 40), "s"} {
			if checkEncodeResult(t, []byte(s), id, nil) {
				accepted++
			}
		}
		checkEncodeResult(t, []byte(s), float64(1), &jsonrpc.Error{Code: 1, Message: "m"})
	}
	if accepted < 20 {
		t.Errorf("fast path took only %d of the seeds", accepted)
	}
	// A result as the SDK makes it is taken.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"text": "<a href=\"x\">&amp;</a>\u2028", "n": 1.5, "l": []any{nil, true}})
	if !checkEncodeResult(t, bytes.TrimSpace(buf.Bytes()), float64(9), nil) {
		t.Error("fast path refused a result the SDK made")
	}
}

func FuzzEncodeResult(f *testing.F) {
	for i, s := range encodeResultSeeds {
		f.Add([]byte(s), int64(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, id int64) {
		if !json.Valid(data) {
			return // the SDK's results are its own marshalled JSON
		}
		checkEncodeResult(t, data, float64(id>>11), nil) // ids as a float64 holds them
	})
}

func checkEncodeResult(t *testing.T, result []byte, id any, rerr error) bool {
	t.Helper()
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	resp := &jsonrpc.Response{ID: rid, Result: result, Error: rerr}
	got, ok := encodeResult(resp, nil)
	if !ok {
		return false
	}
	want, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		t.Fatalf("%s: fast path encoded what EncodeMessage refuses: %v", result, err)
	}
	if want = append(want, '\n'); !bytes.Equal(got, want) {
		t.Fatalf("fast %s\nsdk  %s", got, want)
	}
	return true
}
