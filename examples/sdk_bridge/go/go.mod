module sdkbridge

go 1.19
