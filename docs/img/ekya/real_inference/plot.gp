set terminal svg size 640,480 noenhanced
set key outside below
set grid
set xlabel 'GPUs'
set xtics (0.5, 1, 2, 4, 8)
set output 'accuracy_vs_gpus.svg'
set ylabel 'mean inference accuracy'
set yrange [*:*]
plot 'results.dat' using 1:2 with linespoints title 'thief', \
     'results.dat' using 1:4 with linespoints title 'fixedres', \
     'results.dat' using 1:6 with linespoints title 'noretrain', \
     'results.dat' using 1:8 with linespoints title 'uniform:w128-last-f1-b64:5:0.5', \
     'results.dat' using 1:10 with linespoints title 'uniform:w128-last-f0.5-b16:5:0.5'
set output 'streams_above_target.svg'
set ylabel 'streams with accuracy >= 0.85'
set yrange [0:10]
plot 'results.dat' using 1:3 with linespoints title 'thief', \
     'results.dat' using 1:5 with linespoints title 'fixedres', \
     'results.dat' using 1:7 with linespoints title 'noretrain', \
     'results.dat' using 1:9 with linespoints title 'uniform:w128-last-f1-b64:5:0.5', \
     'results.dat' using 1:11 with linespoints title 'uniform:w128-last-f0.5-b16:5:0.5'
