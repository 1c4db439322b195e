module github.com/memdoctor/memdoctor

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/prometheus/common v0.72.0
	github.com/spf13/cobra v1.10.2
	golang.org/x/tools v0.52.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
