# containerd's .proto files carry Go code-generation options (gogoproto,
# containerd's fieldpath plugin) that protoc for C++ neither needs nor has
# the imports for. They change no field number or type: the wire format is
# the same without them.
/^import weak /d
/^[[:space:]]*option \(gogoproto\./d
/^[[:space:]]*option \(containerd\.plugin\./d
s/ \[\(gogoproto\.[^]]*\]//g
