# The shrunk shared models the launcher tests run (sourced by shared_models.sh and
# launcher_report_test.sh): `shrink_map MODEL` sets `shrink` (the --shrink map), `batch` (for
# the training-mode exports' symbolic batch), `steps` and `plans` (search:gpus[:infer]).
# model: the --shrink map (batch, sequence or image size, widths), then the plans
# (search:gpus[:infer]). Widths are divided by 8 or more, batches cut to 2-4, sequences to 16;
# the vocabularies and class counts shrink to 1000 and 10; the CNNs whose classifier expects
# 7x7 or 6x6 features (vgg16, alexnet) keep their 224x224 images. Models with a symbolic batch
# (the training-mode exports) set `batch`.
shrink_map() {
  batch="" steps="" plans=""
  case $1 in
  mlp_8192x4) shrink=32=4,8192=256
    plans="megatron:4 frontier:8:infer" ;;
  alexnet) shrink=32=2,64=8,192=24,384=48,256=32,4096=256,9216=1152,1000=10
    plans="mcmc:2 model-parallel:4" ;;
  vgg16) shrink=32=2,64=8,128=16,256=32,512=64,4096=256,25088=3136,1000=10
    plans="one-weird-trick:4" ;;
  resnet50) shrink=32=2,224=64,64=8,128=16,256=32,512=64,1024=128,2048=256,1000=10
    plans="frontier:4" ;;
  inception_v3)
    shrink=32=4,299=75,64=8,80=10,192=24,48=6,96=12,384=48,128=16,160=20,320=40,448=56,2048=256
    shrink+=,288=36,768=96,1280=160,256=32,1000=10
    plans="model-parallel:2" ;;
  gpt2_small) shrink=8=2,256=16,2048=32,768=96,2304=288,3072=384,96=24,64=8,50257=1000
    plans="megatron:2" ;;
  bert_base) shrink=8=2,128=16,1024=32,768=96,2304=288,3072=384,96=24,64=8,30522=1000
    plans="dp:4" ;;
  lstm_lm) shrink=20=6,32=2,1024=64,4096=256,8192=512,10000=1000
    plans="model-parallel:2 dp:4" ;;
  lstm_lm_unrolled) shrink=32=2,1024=64,4096=256,8192=512,10000=1000
    plans="mcmc:2:infer" ;;
  # Training-mode exports (../shared/models/train): a symbolic batch, bound to 4 with --batch.
  # One step for resnet50_train: its batch statistics cover 16 values per channel in layer4
  # (batch 4, 2x2 maps), and the second step of a random-init network amplifies the first
  # update's rounding differences (1e-5) chaotically (errors ~0.3 with 2 ranks as with 4).
  resnet50_train) shrink=224=64,64=8,128=16,256=32,512=64,1024=128,2048=256,1000=10 batch=4 steps=1
    plans="data-parallel:4 dp:4 frontier:4" ;;
  bert_base_train) shrink=128=16,768=96,2304=288,3072=384,64=8,30522=1000 batch=4
    plans="data-parallel:4 dp:4 frontier:4" ;;
  *) echo "no shrink map for $1"; exit 1 ;;
  esac
}
